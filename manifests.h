/*
 * `noderecover manifests`: the cluster objects noderecover needs for a set of settings, as one
 * YAML stream (Namespace, ServiceAccount, ClusterRole and binding, Roles the settings need, the
 * Deployment; with --fence, the fence agent's ServiceAccount, Role and binding, and DaemonSet). Settings are validated by settings_parse before they get here, exactly as for run.
 */
#ifndef MANIFESTS_H
#define MANIFESTS_H

#include <stdio.h>
#include "settings.h"

/*
 * Writes the stream for *s to out; image is the pod's image reference (the OCI archive's
 * name); fence: the fence agent too (its ServiceAccount, Role and binding, the DaemonSet;
 * docs/fence.md), the namespace then admitting its privileged pods. Returns 0, or -1 when out
 * could not be written.
 */
int manifests_write(FILE *out, const struct settings *s, const char *image, int fence);

/*
 * Whether `manifests` was asked for the fence agent: `--fence` standing alone, or
 * `--fence[=| ]prefer|require` (the watcher's mode; `--fence=off` asks for none). A `--fence`
 * standing alone is taken out of argv (argc and argv[argc] = NULL follow), so that the settings
 * never see it: it asks for the agent and leaves the watcher's mode at its default; `--fence=`
 * is left for the settings. Any other command: 0, argv untouched.
 */
int manifests_fence_flag(int *argc, char **argv);

#endif
