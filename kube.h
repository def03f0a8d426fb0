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

#define KUBE_TOKEN_MAX 8192
#define KUBE_TOKEN_REREAD 60    /* seconds: the kubelet rotates projected tokens */
#define KUBE_RETRIES 2          /* attempts after the first, for 5xx, 429 and dropped connections */
#define KUBE_RETRY_AFTER_MAX 60 /* longest Retry-After honoured, seconds */
#define KUBE_PAGES_MAX 100000   /* pages of one list: 50 million nodes at the default limit */
#define KUBE_LIST_SECONDS 600   /* longest a whole list may take to read */
#define KUBE_PAGE_SECONDS 60    /* longest one page may take, from its request to its last byte */

struct kube {
	struct http_conn http;            /* large: keep struct kube static */
	struct tls_creds tls;
	const struct kube_target *t;
	char prefix[512];                 /* path prefix of the server URL, "" for none */
	char token[KUBE_TOKEN_MAX];       /* never logged, never in an error */
	time_t token_read;                /* when token_file was last read; 0: never */
	volatile const int *stop;         /* set by a signal: no new request, no more retries */
	char err[512];                    /* why the last call failed, one line */
};

/*
 * Prepares the connection for a target (which must outlive k). Reads the CA and client
 * certificate, and the token. Returns 0, or -1 with one line in err.
 */
int kube_init(struct kube *k, const struct kube_target *t, volatile const int *stop, char *err,
    size_t errlen);

/*
 * Lists every node, page by page (limit, then continue), calling node() for each object.
 * buf[0..cap) holds one Node object at a time. A 410 Expired restarts the list from the
 * first page once, after restart(). Returns KUBE_OK when the whole list was read, else
 * KUBE_FAILED with kube_error() saying why.
 */
enum kube_result kube_list_nodes(struct kube *k, long limit, char *buf, size_t cap,
    kube_node_fn node, kube_restart_fn restart, void *ctx);

/* Whether a name read from the API may be put into a path (a DNS subdomain). */
int kube_name_ok(const char *name);

/*
 * The changes, each one JSON patch (or DELETE) guarded by the node's resourceVersion as
 * listed. annotation: our annotation key; now: the time written as its value (Unix seconds).
 */
struct node_facts;
enum kube_result kube_taint(struct kube *k, const struct node_facts *f, const char *annotation,
    time_t now);
enum kube_result kube_clear(struct kube *k, const struct node_facts *f, const char *annotation);
enum kube_result kube_delete(struct kube *k, const struct node_facts *f);

const char *kube_error(const struct kube *k);

#endif
