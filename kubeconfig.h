/*
 * Reads kubeconfigs (one file or a KUBECONFIG list; the YAML subset kubectl and k3s write, or
 * JSON, through yaml.h) into a kube_target: the chosen context's cluster server, CA,
 * tls-server-name, and its user's token, tokenFile, client certificate and key, or exec credential
 * plugin (plugin.h: read here, run by settings.c and kube.c). Refuses what noderecover will not do
 * (auth providers, basic auth, insecure-skip-tls-verify).
 * Allocates only the target's buffers (and the trees, which it wipes and frees).
 * Knows nothing of TLS or HTTP: the target it fills is a leaf (target.h).
 */
#ifndef KUBECONFIG_H
#define KUBECONFIG_H

#include <stddef.h>
#include "target.h"

#define KUBECONFIG_MAX (1024 * 1024)  /* a larger file is refused */
#define KUBECONFIG_FILES_MAX 16       /* a KUBECONFIG list of more files is refused */

/*
 * Loads the kubeconfig files paths[0..n) into *t (which it zeroes first), merged as kubectl
 * (client-go's loading rules) merges a KUBECONFIG list: the first file that sets current-context
 * gives it, and each context, cluster and user comes whole from the first file that has an entry
 * of its name (a later file's entry of that name is never read). context: the context to use
 * (--context), or NULL for that current-context. skip_missing: a file that does not exist is
 * skipped, as kubectl skips one in KUBECONFIG (the source says which), but not all of them;
 * 0 for one named file (--kubeconfig), which must exist. Any other file that cannot be read or
 * parsed is refused. Relative file names inside each file are taken from that file's own
 * directory, as kubectl does.
 * Only the chosen context, its cluster and its user are read and checked; other entries need
 * only be well-formed where they were looked through. The CA, client certificate and key come
 * from -data (base64) in preference to the file named, as kubectl does; each must hold a whole
 * PEM block (not otherwise checked). A tokenFile wins over an inline token (as in client-go):
 * then token_file is set, token is NULL, and the file was readable and non-empty at load time.
 * t->source says which file the context, the cluster and the user came from.
 * Returns 0, or -1 with *t empty and one line in err naming the file and what is wrong (never
 * a value's text: no token, key or certificate).
 */
int kubeconfig_load_files(const char *const *paths, int n, const char *context, int skip_missing,
    struct kube_target *t, char *err, size_t errlen);

/* One file that must exist, its current context. */
int kubeconfig_load(const char *path, struct kube_target *t, char *err, size_t errlen);

/* A file's text already in memory, for kubeconfig_merge. */
struct kubeconfig_text {
	const char *text;
	size_t len;
	const char *dir;    /* relative names are taken from here; "": as they are; NULL: name's directory */
	const char *name;   /* the file's path, for messages and the source */
};

/* The merge of kubeconfig_load_files, from texts in memory (n: 1 to KUBECONFIG_FILES_MAX). */
int kubeconfig_merge(const struct kubeconfig_text *x, int n, const char *context, struct kube_target *t,
    char *err, size_t errlen);

/* One text (dir: the directory relative names are taken from): for the tests and the fuzzer. */
int kubeconfig_parse(const char *text, size_t len, const char *dir, const char *name,
    struct kube_target *t, char *err, size_t errlen);

/*
 * Decodes standard base64 (A-Z a-z 0-9 + /, '=' padding required) from in[0..inlen) into out,
 * which holds outcap bytes (inlen / 4 * 3 + 3 is always enough). Spaces, tabs and line breaks are
 * skipped; any other byte outside the alphabet, padding anywhere but at the end, or a length that
 * is not whole 4-character groups is refused. Returns 0 with *outlen set, or -1.
 */
int kubeconfig_base64_decode(const char *in, size_t inlen, unsigned char *out, size_t outcap,
    size_t *outlen);

/* Frees what a target holds (its plugin too) and zeroes it; the token and key are wiped first.
 * Safe twice. Here, not in target.c: target.h is below plugin.h, which uses its types. */
void kube_target_free(struct kube_target *t);

#endif
