/*
 * The Kubernetes API calls noderecover makes: list nodes page by page, patch a node, delete a
 * node; and the credentials they carry. Knows the API's paths and status codes, not the rules.
 */
#ifndef KUBE_H
#define KUBE_H

#include <stddef.h>
#include <time.h>
#include "http.h"

#define KUBE_PATH_MAX 4096

/*
 * Where the cluster is and how to prove who we are: filled at start-up by settings.c from
 * flags, a kubeconfig, the pod's service account or k3s's kubeconfig. The *_pem and token
 * buffers are heap copies owned by the target (kube_target_free).
 */
struct kube_target {
	char server[512];            /* https://HOST[:PORT][/PREFIX], as given */
	char tls_server_name[256];   /* name to verify instead of HOST; "" for HOST */
	char *ca_pem;                /* CA certificates, PEM text */
	size_t ca_len;
	char token_file[KUBE_PATH_MAX]; /* bearer token re-read from here; "" if none */
	char *token;                 /* a token given inline (kubeconfig "token:"); NULL if none */
	char *cert_pem, *key_pem;    /* client certificate chain and key, PEM; NULL if none */
	size_t cert_len, key_len;
	char source[KUBE_PATH_MAX + 64]; /* where this came from, for the start-up line */
};
void kube_target_free(struct kube_target *t);

enum kube_result {
	KUBE_OK,
	KUBE_CHANGED,    /* the precondition failed: 422 on a JSON-patch test, 409 on a delete */
	KUBE_GONE,       /* 404 */
	KUBE_FAILED      /* anything else; the reason is in kube_error() */
};

struct kube;
/* Called for each Node object of a list, or with obj == NULL for one too large to read (len: its size so far). Nonzero stops the list. */
typedef int (*kube_node_fn)(void *ctx, const char *obj, size_t len);
/* Called when a list restarts from the first page (410 Expired): forget what the earlier pages said. */
typedef void (*kube_restart_fn)(void *ctx);

#endif
