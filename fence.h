/*
 * The fence agent (docs/fence.md): `noderecover fence`, one on each node. Its loop checks the
 * API server and the kubelet every --fence-check, keeps its Lease noderecover-fence-NODE armed,
 * asks its peers when cut off, and fences its own node (watchdog, reboot or exec) when
 * fence_rules.c says so. Owns its connections, its listener's peer route and its metrics.
 */
#ifndef FENCE_H
#define FENCE_H

#include <signal.h>
#include "lease.h"
#include "settings.h"
#include "target.h"

/* The Lease's name prefix, label and the annotations both sides read are lease.h's and json.h's
 * (LEASE_FENCE_*, JSON_FENCE_*): one spelling of the contract. This one is the agent's own. */
#define FENCE_ANN_ADDRESS "noderecover.io/fence-address"

/*
 * Runs the agent until stop is set (cut: the request in flight is cut short). s and t as
 * settings_parse and settings_target made them; version for its start line and /metrics. Returns the exit status: 0 stopped by a
 * signal, 2 a bad setting (the line said why).
 */
int fence_run(const struct settings *s, const struct kube_target *t, const char *version, volatile sig_atomic_t *stop,
    volatile sig_atomic_t *cut);

#endif
