/*
 * `noderecover manifests`: the cluster objects noderecover needs for a set of settings, as one
 * YAML stream (Namespace, ServiceAccount, ClusterRole and binding, Roles the settings need, the
 * Deployment). Settings are validated by settings_parse before they get here, exactly as for run.
 */
#ifndef MANIFESTS_H
#define MANIFESTS_H

#include <stdio.h>
#include "settings.h"

/*
 * Writes the stream for *s to out; image is the pod's image reference (the OCI archive's
 * name). Returns 0, or -1 when out could not be written.
 */
int manifests_write(FILE *out, const struct settings *s, const char *image);

#endif
