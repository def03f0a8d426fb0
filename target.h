/*
 * Where the cluster is and how noderecover proves who it is, and the one bounded reader of the
 * small files those come from (CA, client certificate and key, token, kubeconfig).
 * A leaf: settings.c and kubeconfig.c fill a target, kube.c uses it; it includes no TLS or HTTP
 * header.
 */
#ifndef TARGET_H
#define TARGET_H

#include <stddef.h>

#define TARGET_PATH_MAX 4096

struct plugin;

/*
 * Filled at start-up from flags, a kubeconfig, the pod's service account or k3s's kubeconfig.
 * The *_pem and token buffers are heap copies owned by the target (kube_target_free, in
 * kubeconfig.h: with its plugin, whose module is above this one).
 */
struct kube_target {
	char server[512];            /* https://HOST[:PORT][/PREFIX], as given */
	char tls_server_name[256];   /* name to verify instead of HOST; "" for HOST */
	char *ca_pem;                /* CA certificates, PEM text */
	size_t ca_len;
	char token_file[TARGET_PATH_MAX]; /* bearer token re-read from here; "" if none */
	char *token;                 /* a token given inline (kubeconfig "token:"); NULL if none */
	char *cert_pem, *key_pem;    /* client certificate chain and key, PEM; NULL if none */
	size_t cert_len, key_len;
	struct plugin *plugin;       /* an exec credential plugin (plugin.h) gives the token or the
	                                certificate and key; NULL if none */
	char source[TARGET_PATH_MAX + 64]; /* where this came from, for the start-up line */
};

/*
 * Whether tok[0..n) can be a bearer token: 1 to 8192 bytes of printable ASCII without space.
 * Anything else would let it bend the request's headers. The one check, for a token from a
 * kubeconfig and one read from a file.
 */
#define TARGET_TOKEN_MAX 8192
int target_token_ok(const char *tok, size_t n);

/* What reading a file came to. */
enum file_status {
	FILE_OK = 0,
	FILE_UNREADABLE = -1,  /* open or read failed; errno says why */
	FILE_TOO_LARGE = -2,   /* more bytes than the caller's bound */
	FILE_NOT_REGULAR = -3  /* a FIFO or a device would block or never end */
};

/*
 * Reads the whole regular file path into buf[0..cap): at most cap - 1 bytes, NUL-terminated,
 * *len set. Allocates nothing, so a file re-read in the loop (the token) costs no memory.
 * Returns FILE_OK or a negative enum file_status; on failure buf holds no byte of the file.
 */
int file_read(const char *path, char *buf, size_t cap, size_t *len);

/* The same into a new buffer of the file's size (plus a NUL) for the caller to free. */
int file_load(const char *path, size_t max, char **out, size_t *len);

/*
 * The one wording of a failed read: "cannot read WHAT PATH: REASON" into err, where REASON is
 * errno's words, "larger than MAX bytes" or "not a regular file". Returns -1.
 */
int file_error(char *err, size_t errlen, const char *what, const char *path, int status, size_t max);

#endif
