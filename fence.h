/*
 * The fence agent (docs/fence.md): `noderecover fence`, one on each node. Its loop checks the
 * API server and the kubelet every --fence-check, keeps its Lease noderecover-fence-NODE armed,
 * asks its peers when cut off, and fences its own node (watchdog, reboot or exec) when
 * fence_rules.c says so. Owns its connections, its listener's peer route and its metrics.
 */
#ifndef FENCE_H
#define FENCE_H

#include <signal.h>
#include "settings.h"
#include "target.h"

#define FENCE_LEASE_PREFIX "noderecover-fence-"
#define FENCE_LABEL_KEY "app.kubernetes.io/component"
#define FENCE_LABEL_VALUE "fence-agent"
#define FENCE_ANN_ADDRESS "noderecover.io/fence-address"
#define FENCE_ANN_SAFE "noderecover.io/fence-safe-seconds"
#define FENCE_ANN_ACTION "noderecover.io/fence-action"
#define FENCE_ANN_FENCING "noderecover.io/fencing"
#define FENCE_ANN_REQUEST "noderecover.io/fence-request"

/*
 * Runs the agent until stop is set (cut: the request in flight is cut short). s and t as
 * settings_parse and settings_target made them; version for its start line and /metrics. Returns the exit status: 0 stopped by a
 * signal, 2 a bad setting (the line said why).
 */
int fence_run(const struct settings *s, const struct kube_target *t, const char *version, volatile sig_atomic_t *stop,
    volatile sig_atomic_t *cut);

#endif
