/*
 * Reads a kubeconfig (the YAML subset kubectl and k3s write, or JSON) into a kube_target:
 * the current context's cluster server, CA, tls-server-name, and its user's token, tokenFile
 * or client certificate and key. Refuses what noderecover will not do (exec plugins, auth
 * providers, basic auth, insecure-skip-tls-verify). Allocates only the target's buffers.
 */
#ifndef KUBECONFIG_H
#define KUBECONFIG_H

#include <stddef.h>
#include "kube.h"

#define KUBECONFIG_MAX (1024 * 1024)  /* a larger file is refused */

/*
 * Loads path into *t (which it zeroes first). Relative file names inside the kubeconfig are
 * taken relative to the kubeconfig's own directory, as kubectl does.
 * Returns 0, or -1 with one line in err naming the file and what is wrong (never a secret).
 */
int kubeconfig_load(const char *path, struct kube_target *t, char *err, size_t errlen);

/*
 * The same, from text already in memory (dir: the directory relative names are taken from).
 * For the tests and for kubeconfig_load.
 */
int kubeconfig_parse(const char *text, size_t len, const char *dir, const char *name,
    struct kube_target *t, char *err, size_t errlen);

#endif
