/*
 * Fuzz target for kubeconfig.c and yaml.c: the input as a kubeconfig (YAML or JSON), with file
 * names taken relative to a directory that does not exist, and as base64 for the decoder. An
 * input with form feeds (a byte no kubeconfig may hold) is also cut at them into up to
 * KUBECONFIG_FILES_MAX files, merged as a KUBECONFIG list, with the current context and with
 * --context a. And as an exec plugin's output (plugin_parse: an ExecCredential's rules).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubeconfig.h"
#include "plugin.h"

static void bug(const char *what)
{
	fprintf(stderr, "fuzz_kubeconfig: %s\n", what);
	abort();
}

/* What every result must be, one file or a merge. */
static void check_result(int r, struct kube_target *t, const char *err, size_t errlen)
{
	if (!memchr(err, 0, errlen))
		bug("err not terminated");
	if (r < 0 && err[0] == 0)
		bug("failed without a reason");
	if (r == 0) {
		if (!memchr(t->server, 0, sizeof t->server) || !memchr(t->tls_server_name, 0, sizeof t->tls_server_name) ||
		    !memchr(t->token_file, 0, sizeof t->token_file) || !memchr(t->source, 0, sizeof t->source))
			bug("a target string is not terminated");
		if (!t->ca_pem && t->ca_len)
			bug("ca_len without ca_pem");
		if (t->token)
			(void)strlen(t->token);
		kube_target_free(t);
		/* (kube_target_free above freed the exec plugin too, or ASan says so) */
	} else if (t->ca_pem || t->token || t->cert_pem || t->key_pem || t->plugin) {
		bug("a failed parse left buffers in the target");
	}
}

/* The pieces between form feeds as files of one KUBECONFIG list (each its own exact heap block). */
static void merge(const char *text, size_t size)
{
	struct kubeconfig_text x[KUBECONFIG_FILES_MAX];
	static const char *const names[] = { "f0", "f1", "f2", "f3", "f4", "f5", "f6", "f7",
		"f8", "f9", "f10", "f11", "f12", "f13", "f14", "f15" };
	struct kube_target t;
	char err[256];
	size_t at = 0;
	int n = 0;

	while (n < KUBECONFIG_FILES_MAX && at <= size) {
		const char *ff = memchr(text + at, '\f', size - at);
		size_t len = ff ? (size_t)(ff - text - at) : size - at;
		char *piece = malloc(len ? len : 1);
		memcpy(piece, text + at, len);
		x[n].text = piece;
		x[n].len = len;
		x[n].dir = "/nonexistent";
		x[n].name = names[n];
		n++;
		if (!ff)
			break;
		at += len + 1;
	}
	check_result(kubeconfig_merge(x, n, NULL, &t, err, sizeof err), &t, err, sizeof err);
	check_result(kubeconfig_merge(x, n, "a", &t, err, sizeof err), &t, err, sizeof err);
	for (int i = 0; i < n; i++)
		free((char *)x[i].text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kube_target t;
	char err[256];
	/* exactly size bytes, no NUL after them: the parser must keep to len */
	char *text = malloc(size ? size : 1);
	memcpy(text, data, size);

	int r = kubeconfig_parse(text, size, "/nonexistent", "fuzz", &t, err, sizeof err);
	check_result(r, &t, err, sizeof err);
	if (memchr(text, '\f', size))
		merge(text, size);

	size_t cap = size / 4 * 3 + 3, outlen = 0, again = 0;
	unsigned char *out = malloc(cap);
	if (kubeconfig_base64_decode(text, size, out, cap, &outlen) == 0) {
		if (outlen > cap)
			bug("base64 outlen beyond cap");
		unsigned char *exact = malloc(outlen ? outlen : 1);
		if (kubeconfig_base64_decode(text, size, exact, outlen, &again) != 0 || again != outlen ||
		    memcmp(exact, out, outlen) != 0)
			bug("base64 decode differs with an exact buffer");
		if (outlen > 0 && kubeconfig_base64_decode(text, size, exact, outlen - 1, &again) == 0)
			bug("base64 decode fitted in a buffer too small");
		free(exact);
	}
	free(out);

	/* an exec plugin's output: a credential taken whole or not at all, the token a header can carry */
	struct plugin *p = plugin_new(PLUGIN_V1, "fuzz");
	if (!p)
		bug("out of memory");
	if (plugin_parse(p, text, size, err, sizeof err) == 0) {
		if (p->gen != 1 || (!p->token[0] && !p->cert_pem) || (!!p->cert_pem != !!p->key_pem))
			bug("a parsed ExecCredential without one whole credential");
		if (p->token[0] && !target_token_ok(p->token, strlen(p->token)))
			bug("a token a header cannot carry");
	} else if (p->gen != 0 || p->token[0] || p->cert_pem || p->key_pem || !memchr(err, 0, sizeof err) || !err[0]) {
		bug("a refused ExecCredential left a credential or no reason");
	}
	plugin_free(p);
	free(text);
	return 0;
}
