/*
 * Reads a kubeconfig (the YAML subset kubectl and k3s write, or JSON) into a kube_target:
 * the current context's cluster server, CA, tls-server-name, and its user's token, tokenFile
 * or client certificate and key. Refuses what noderecover will not do (exec plugins, auth
 * providers, basic auth, insecure-skip-tls-verify). Allocates only the target's buffers.
 * Knows nothing of TLS or HTTP: the target it fills is a leaf (target.h).
 */
#ifndef KUBECONFIG_H
#define KUBECONFIG_H

#include <stddef.h>
#include "target.h"

#define KUBECONFIG_MAX (1024 * 1024)  /* a larger file is refused */

/*
 * Loads path into *t (which it zeroes first). Relative file names inside the kubeconfig are
 * taken relative to the kubeconfig's own directory, as kubectl does. One path: a KUBECONFIG list
 * (a:b) is the caller's to split or refuse.
 * Only the current context, its cluster and its user are read and checked; other entries need
 * only be well-formed. The CA, client certificate and key come from -data (base64) in preference
 * to the file named, as kubectl does; each must hold a whole PEM block (not otherwise checked).
 * A tokenFile wins over an inline token (as in client-go): then token_file is set, token is
 * NULL, and the file was readable and non-empty at load time.
 * Returns 0, or -1 with *t empty and one line in err naming the file and what is wrong (never
 * a value's text: no token, key or certificate).
 */
int kubeconfig_load(const char *path, struct kube_target *t, char *err, size_t errlen);

/*
 * The same, from text already in memory (dir: the directory relative names are taken from).
 * For the tests and for kubeconfig_load.
 */
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

#endif
