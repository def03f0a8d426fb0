/*
 * The YAML `noderecover manifests` prints. What depends on the settings comes from the two
 * tables that say it once: the pod's environment (and the flags that have no variable) from
 * settings.c's settings_rows, the RBAC rules from access.c's access_rules, for the settings the
 * pod runs with. Writes to the caller's stream only; reads no file, sends nothing.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "access.h"
#include "fence.h"
#include "manifests.h"

#define NAME "noderecover"        /* namespace, ServiceAccount, roles, Deployment */
#define FENCE NAME "-fence"      /* the fence agent's ServiceAccount, Role, Secret, DaemonSet */
#define FENCE_PORT "9466"        /* where the agent listens (its peers, probes, /metrics): docs/fence.md */
#define FENCE_SECRET_DIR "/etc/noderecover-fence"   /* the Secret's mount; the file peer-secret */
#ifndef NODERECOVER_VERSION
#define NODERECOVER_VERSION "dev"
#endif

/* Whether the pod is given row r. */
static int passed_on(const struct settings_row *r, const struct settings *s)
{
	switch (r->pod) {
	case SETTINGS_POD_NEVER:
		return 0;
	case SETTINGS_POD_CHANGED:
		return !settings_is_default(r, s);
	case SETTINGS_POD_PRUNING:
		return settings_pruning(s);
	default:
		return 1;
	}
}

/*
 * The settings the pod runs with, as far as its permissions go: run, with the values it is
 * given whatever the settings here (two replicas electing a leader), its Lease in its own
 * namespace.
 */
static void pod_settings(const struct settings *s, struct settings *pod)
{
	char err[160];

	*pod = *s;
	pod->mode = MODE_RUN;
	for (size_t i = 0; i < settings_row_count; i++) {
		const struct settings_row *r = &settings_rows[i];
		if (r->pod == SETTINGS_POD_FIXED && settings_set(r, pod, r->pod_value, r->flag, err, sizeof err) < 0)
			abort();   /* a row's own value refused: a bug in the table */
	}
	snprintf(pod->lease_namespace, sizeof pod->lease_namespace, "%s", NAME);
	/* the fence Leases too (docs/fence.md): the agents' and the watcher's namespace */
	snprintf(pod->fence_namespace, sizeof pod->fence_namespace, "%s", NAME);
}

/* A YAML double-quoted scalar: safe for any bytes a setting may hold. */
static void quoted(FILE *f, const char *v)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\x%02x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

/* The labels the widely used charts give every object (the chart adds Helm's own two: its
 * helm.sh/chart and managed-by), so `helm template` with default values is this output. */
static void labels_of(FILE *f, const char *indent, int fence)
{
	fprintf(f, "%slabels:\n%s  app.kubernetes.io/name: %s\n%s  app.kubernetes.io/instance: " NAME "\n"
	    "%s  app.kubernetes.io/version: ", indent, indent, fence ? FENCE : NAME, indent, indent);
	quoted(f, NODERECOVER_VERSION);
	fputc('\n', f);
	/* the fence agent's objects: another name, so that no selector of the watcher's (its
	 * Deployment's, a chart's Service and PodMonitor) takes the agents' pods */
	if (fence)
		fprintf(f, "%s  " LEASE_FENCE_LABEL_KEY ": " LEASE_FENCE_LABEL_VALUE "\n", indent);
}

static void labels(FILE *f, const char *indent)
{
	labels_of(f, indent, 0);
}

/* What selects the pods: the name and the instance (a chart's release), never the version. */
static void selector_of(FILE *f, const char *indent, int fence)
{
	fprintf(f, "%s  app.kubernetes.io/name: %s\n%s  app.kubernetes.io/instance: " NAME "\n", indent,
	    fence ? FENCE : NAME, indent);
}

static void selector(FILE *f, const char *indent)
{
	selector_of(f, indent, 0);
}

static void header_of(FILE *f, const char *api, const char *kind, const char *name, const char *ns, int fence)
{
	fprintf(f, "---\napiVersion: %s\nkind: %s\nmetadata:\n  name: %s\n", api, kind, name);
	if (ns)
		fprintf(f, "  namespace: %s\n", ns);
	labels_of(f, "  ", fence);
}

static void header_named(FILE *f, const char *api, const char *kind, const char *name, const char *ns)
{
	header_of(f, api, kind, name, ns, 0);
}

static void header(FILE *f, const char *api, const char *kind, const char *ns)
{
	header_named(f, api, kind, NAME, ns);
}

/* The rules of the role for namespace ns (NULL: the ClusterRole): the permissions the pod needs. */
static void rules(FILE *f, const struct settings *pod, const char *ns)
{
	int n = 0;

	for (size_t i = 0; i < access_rule_count; i++) {
		const struct access_rule *g = &access_rules[i];
		const char *where = access_namespace(g, pod);
		if (!access_rule_on(g, pod) || (ns == NULL) != (where == NULL) || (ns && strcmp(ns, where) != 0))
			continue;
		if (n++ == 0)
			fputs("rules:\n", f);
		fprintf(f, "  # %s\n  - apiGroups: [\"%s\"]\n    resources: [\"%s\"]\n    verbs: [", g->why, g->group, g->resource);
		for (int v = 0; v < ACCESS_VERBS_MAX && g->verbs[v].verb; v++)
			fprintf(f, "%s\"%s\"", v ? ", " : "", g->verbs[v].verb);
		fputs("]\n", f);
	}
}

static void binding(FILE *f, const char *kind, const char *name, const char *ns)
{
	char bkind[32];

	snprintf(bkind, sizeof bkind, "%sBinding", kind);
	header_named(f, "rbac.authorization.k8s.io/v1", bkind, name, ns);
	fprintf(f, "roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: %s\n  name: %s\n"
	    "subjects:\n  - kind: ServiceAccount\n    name: " NAME "\n    namespace: " NAME "\n", kind, name);
}

static void rbac(FILE *f, const struct settings *s)
{
	struct settings pod;

	pod_settings(s, &pod);
	header(f, "rbac.authorization.k8s.io/v1", "ClusterRole", NULL);
	rules(f, &pod, NULL);
	binding(f, "ClusterRole", NAME, NULL);
	/* a Role and its binding in each namespace a rule names, in the table's order */
	for (size_t i = 0; i < access_rule_count; i++) {
		const char *ns = access_namespace(&access_rules[i], &pod);
		size_t j = 0;
		if (!ns || !access_rule_on(&access_rules[i], &pod))
			continue;
		while (j < i && !(access_rule_on(&access_rules[j], &pod) && access_namespace(&access_rules[j], &pod) &&
		    strcmp(access_namespace(&access_rules[j], &pod), ns) == 0))
			j++;
		if (j < i)
			continue;   /* written with an earlier rule */
		/* A Role outside the pod's namespace is named after its first rule's resource
		 * (noderecover-events): a kustomize overlay that sets one namespace for all would
		 * otherwise hold two Roles of one name there and refuse the build. */
		char name[64];
		if (strcmp(ns, NAME) == 0)
			snprintf(name, sizeof name, "%s", NAME);
		else if ((size_t)snprintf(name, sizeof name, NAME "-%s", access_rules[i].resource) >= sizeof name)
			abort();   /* a resource name longer than the table's: a bug in the table */
		header_named(f, "rbac.authorization.k8s.io/v1", "Role", name, ns);
		rules(f, &pod, ns);
		binding(f, "Role", name, ns);
	}
}

/* With pruning the token may delete nodes: keep it on control-plane nodes, which k3s's agents
 * cannot reach. Without, nothing pins it; either way it leaves a dead node after 10 s. */
static void placement(FILE *f, const struct settings *s)
{
	fputs("      affinity:\n", f);
	if (settings_pruning(s))
		fputs("        nodeAffinity:\n"
		    "          requiredDuringSchedulingIgnoredDuringExecution:\n"
		    "            nodeSelectorTerms:\n"
		    "              - matchExpressions:\n"
		    "                  - key: node-role.kubernetes.io/control-plane\n"
		    "                    operator: Exists\n", f);
	/* two replicas on one node would both go with it */
	fputs("        podAntiAffinity:\n"
	    "          preferredDuringSchedulingIgnoredDuringExecution:\n"
	    "            - weight: 100\n"
	    "              podAffinityTerm:\n"
	    "                topologyKey: kubernetes.io/hostname\n"
	    "                labelSelector:\n"
	    "                  matchLabels:\n", f);
	selector(f, "                  ");
	fputs("      tolerations:\n", f);
	if (settings_pruning(s))
		fputs("        - key: node-role.kubernetes.io/control-plane\n"
		    "          operator: Exists\n"
		    "          effect: NoSchedule\n", f);
	fputs("        # the watcher must not sit on the node it would recover\n"
	    "        - key: node.kubernetes.io/unreachable\n"
	    "          operator: Exists\n"
	    "          effect: NoExecute\n"
	    "          tolerationSeconds: 10\n"
	    "        - key: node.kubernetes.io/not-ready\n"
	    "          operator: Exists\n"
	    "          effect: NoExecute\n"
	    "          tolerationSeconds: 10\n", f);
}

/* One variable of the pod: value, or (value NULL) the pod's field. */
static void pod_env(FILE *f, const char *name, const char *value, const char *field)
{
	fprintf(f, "            - name: %s\n", name);
	if (!value) {
		fprintf(f, "              valueFrom:\n                fieldRef:\n                  fieldPath: %s\n", field);
		return;
	}
	fputs("              value: ", f);
	quoted(f, value);
	fputc('\n', f);
}

static void deployment(FILE *f, const struct settings *s, const char *image)
{
	char buf[32];

	header(f, "apps/v1", "Deployment", NAME);
	fputs("spec:\n"
	    "  replicas: 2            # one acts, holding the Lease; the other takes over within 25 s\n"
	    "  selector:\n"
	    "    matchLabels:\n", f);
	selector(f, "    ");
	fputs("  template:\n"
	    "    metadata:\n", f);
	labels(f, "      ");
	fputs("    spec:\n"
	    "      serviceAccountName: " NAME "\n"
	    "      automountServiceAccountToken: true\n"
	    "      securityContext:\n"
	    "        runAsNonRoot: true\n"
	    "        runAsUser: 65532\n"
	    "        runAsGroup: 65532\n"
	    "        seccompProfile:\n"
	    "          type: RuntimeDefault\n", f);
	placement(f, s);
	fputs("      containers:\n"
	    "        - name: " NAME "\n"
	    "          image: ", f);
	quoted(f, image);
	fputs("\n          imagePullPolicy: IfNotPresent\n"
	    "          args: [\"run\"", f);
	/* a setting without a variable goes as its flag */
	for (size_t i = 0; i < settings_row_count; i++) {
		const struct settings_row *r = &settings_rows[i];
		if (!r->env && passed_on(r, s)) {
			fprintf(f, ", \"%s\", ", r->flag);
			quoted(f, settings_value(r, s, buf, sizeof buf));
		}
	}
	fputs("]\n          env:\n", f);
	for (size_t i = 0; i < settings_row_count; i++) {
		const struct settings_row *r = &settings_rows[i];
		if (r->env && passed_on(r, s))
			pod_env(f, r->env, r->pod == SETTINGS_POD_FIELD ? NULL : r->pod == SETTINGS_POD_FIXED ? r->pod_value
			    : settings_value(r, s, buf, sizeof buf), r->pod_value);
	}
	/* the election's identity */
	pod_env(f, SETTINGS_POD_NAME, NULL, "metadata.name");
	/* /livez fails only when no pass started for 3 polls and a whole list: then restart it;
	 * /readyz until the first list and after 3 failed in a row */
	fputs("          ports:\n"
	    "            - name: metrics\n"
	    "              containerPort: " SETTINGS_POD_PORT "\n"
	    "              protocol: TCP\n"
	    "          livenessProbe:\n"
	    "            httpGet:\n"
	    "              path: /livez\n"
	    "              port: metrics\n"
	    "            periodSeconds: 10\n"
	    "            timeoutSeconds: 2\n"
	    "            failureThreshold: 3\n"
	    "          readinessProbe:\n"
	    "            httpGet:\n"
	    "              path: /readyz\n"
	    "              port: metrics\n"
	    "            periodSeconds: 5\n"
	    "            timeoutSeconds: 2\n"
	    "            failureThreshold: 1\n", f);
	/* Peak RSS is under 1 MiB even at 20000 nodes (BENCHMARKS.md); the limit leaves room for
	 * socket buffers and the binary's own pages. */
	fputs("          resources:\n"
	    "            requests:\n"
	    "              cpu: 10m\n"
	    "              memory: 4Mi\n"
	    "            limits:\n"
	    "              memory: 16Mi\n"
	    "          securityContext:\n"
	    "            allowPrivilegeEscalation: false\n"
	    "            readOnlyRootFilesystem: true\n"
	    "            privileged: false\n"
	    "            capabilities:\n"
	    "              drop: [\"ALL\"]\n", f);
}

/* The agent's settings the DaemonSet passes on, when not their defaults (the rest are the
 * pod's own: its node, namespace, address, listener and secret file). */
static const char *const fence_passed[] = {
	"--fence-check", "--fence-after", "--fence-isolated-after", "--fence-renew", "--fence-action",
	"--fence-exec", "--fence-exec-timeout", "--fence-watchdog", "--fence-watchdog-timeout", "--fence-kubelet-url",
};

/*
 * The fence agent (docs/fence.md): its ServiceAccount, its Role on the fence Leases in the
 * namespace (the watcher's: the agents' Leases are where the watcher reads them), and the
 * DaemonSet on every node. The peer secret is not here: a value printed here would change at
 * every run and, applied again, split the agents into two keys (each one's answers then count
 * as no answer to the others); a value in deploy/ would be everyone's. It is created once, by
 * `kubectl create`, which refuses to replace it (the header says how).
 */
static void fence_agent(FILE *f, const struct settings *s, const char *image)
{
	char buf[32];

	header_of(f, "v1", "ServiceAccount", FENCE, NAME, 1);
	header_of(f, "rbac.authorization.k8s.io/v1", "Role", FENCE, NAME, 1);
	fputs("rules:\n"
	    "  # its own Lease (" LEASE_FENCE_PREFIX "NODE: created at start, renewed, deleted on a stop\n"
	    "  # before any fence) and its peers' (listed); RBAC cannot narrow create or list to names,\n"
	    "  # nor name a Lease per node before the node exists\n"
	    "  - apiGroups: [\"coordination.k8s.io\"]\n"
	    "    resources: [\"leases\"]\n"
	    "    verbs: [\"get\", \"list\", \"watch\", \"create\", \"update\", \"patch\", \"delete\"]\n", f);
	header_of(f, "rbac.authorization.k8s.io/v1", "RoleBinding", FENCE, NAME, 1);
	fputs("roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: " FENCE "\n"
	    "subjects:\n  - kind: ServiceAccount\n    name: " FENCE "\n    namespace: " NAME "\n", f);

	header_of(f, "apps/v1", "DaemonSet", FENCE, NAME, 1);
	fputs("spec:\n"
	    "  selector:\n"
	    "    matchLabels:\n", f);
	selector_of(f, "    ", 1);
	fputs("  updateStrategy:\n"
	    "    type: RollingUpdate\n"
	    "    rollingUpdate:\n"
	    "      maxUnavailable: 1\n"
	    "  template:\n"
	    "    metadata:\n", f);
	labels_of(f, "      ", 1);
	fputs("    spec:\n"
	    "      serviceAccountName: " FENCE "\n"
	    "      automountServiceAccountToken: true\n"
	    "      # the node's own address (peers reach it there; POD_IP is the node's) and the kubelet's\n"
	    "      # 127.0.0.1:10248; the host's PID namespace, so that reboot(2) reboots the node (in a\n"
	    "      # PID namespace of its own it only ends the container)\n"
	    "      hostNetwork: true\n"
	    "      hostPID: true\n"
	    "      dnsPolicy: ClusterFirstWithHostNet\n"
	    "      priorityClassName: system-node-critical\n"
	    "      # a stopped agent closes the watchdog properly; one that hangs is fenced by it\n"
	    "      terminationGracePeriodSeconds: 10\n"
	    "      # on every node, control-plane nodes and unreachable ones included: it is what fences them\n"
	    "      tolerations:\n"
	    "        - operator: Exists\n"
	    "      containers:\n"
	    "        - name: fence\n"
	    "          image: ", f);
	quoted(f, image);
	fputs("\n          imagePullPolicy: IfNotPresent\n"
	    "          args: [\"fence\"]\n"
	    "          env:\n", f);
	pod_env(f, "NODE_NAME", NULL, "spec.nodeName");
	pod_env(f, "POD_IP", NULL, "status.podIP");
	pod_env(f, "NODE_RECOVERY_FENCE_PEER_SECRET_FILE", FENCE_SECRET_DIR "/peer-secret", NULL);
	pod_env(f, "NODE_RECOVERY_FENCE_LISTEN", ":" FENCE_PORT, NULL);
	for (size_t i = 0; i < sizeof fence_passed / sizeof fence_passed[0]; i++) {
		const struct settings_row *r = settings_find(fence_passed[i]);
		if (r && r->env && !settings_is_default(r, s))
			pod_env(f, r->env, settings_value(r, s, buf, sizeof buf), NULL);
	}
	/* no liveness probe: a restart would open the watchdog again and pet it, undoing a fence
	 * under way; an agent that hangs stops petting and is fenced by the watchdog itself */
	fputs("          ports:\n"
	    "            - name: fence\n"
	    "              containerPort: " FENCE_PORT "\n"
	    "              protocol: TCP\n"
	    "          readinessProbe:\n"
	    "            httpGet:\n"
	    "              path: /readyz\n"
	    "              port: fence\n"
	    "            periodSeconds: 10\n"
	    "            timeoutSeconds: 2\n"
	    "          resources:\n"
	    "            requests:\n"
	    "              cpu: 10m\n"
	    "              memory: 8Mi\n"
	    "            limits:\n"
	    "              memory: 32Mi\n"
	    "          # Privileged, the honest minimum: writing /dev/watchdog needs the device allowed in\n"
	    "          # the container's device cgroup, which Kubernetes grants no unprivileged container\n"
	    "          # (a hostPath of a device is mounted but not allowed: open() gets EPERM), and\n"
	    "          # reboot(2) needs CAP_SYS_BOOT, which privileged includes. Root: the device is root's.\n"
	    "          securityContext:\n"
	    "            privileged: true\n"
	    "            runAsUser: 0\n"
	    "            readOnlyRootFilesystem: true\n"
	    "          volumeMounts:\n"
	    "            - name: peer-secret\n"
	    "              mountPath: " FENCE_SECRET_DIR "\n"
	    "              readOnly: true\n"
	    "            - name: dev\n"
	    "              mountPath: /dev\n"
	    "      volumes:\n"
	    "        - name: peer-secret\n"
	    "          secret:\n"
	    "            secretName: " FENCE "\n"
	    "            defaultMode: 0400\n"
	    "        # the host's /dev, not a hostPath of /dev/watchdog: on a node without one, a runtime\n"
	    "        # makes a directory of that name (type \"\") or the pod never starts (CharDevice), where\n"
	    "        # the agent should fall back to reboot; a watchdog loaded later (softdog) shows up\n"
	    "        - name: dev\n"
	    "          hostPath:\n"
	    "            path: /dev\n"
	    "            type: Directory\n", f);
}

int manifests_write(FILE *f, const struct settings *s, const char *image, int fence)
{
	fprintf(f, "# noderecover in a cluster: taint after %llds, %s%s.\n"
	    "# Printed by `noderecover manifests`; to change a setting, run it again rather than edit.\n"
	    "# kubectl apply -f this file, or put it in k3s's /var/lib/rancher/k3s/server/manifests/.\n",
	    (long long)s->taint_after, settings_pruning(s) ? "pruning on" : "pruning off",
	    fence ? ", the fence agent on every node" : "");
	if (fence)
		fputs("# The fence agents' peer secret is not in this file: create it once, before or after applying\n"
		    "# (the agents wait for it; `create` never replaces it, so running this again changes nothing):\n"
		    "#   kubectl -n " NAME " create secret generic " FENCE " \\\n"
		    "#     --from-literal=peer-secret=\"$(od -An -N32 -tx1 /dev/urandom | tr -d ' \\n')\"\n", f);
	header(f, "v1", "Namespace", NULL);
	if (fence)
		fputs("    # the fence agent's pods are privileged (the watchdog device, reboot); the watcher's\n"
		    "    # still meet restricted, and any other pod here is warned of and audited against it\n"
		    "    pod-security.kubernetes.io/enforce: privileged\n"
		    "    pod-security.kubernetes.io/warn: restricted\n"
		    "    pod-security.kubernetes.io/audit: restricted\n", f);
	else
		fputs("    # the pod needs nothing privileged\n"
		    "    pod-security.kubernetes.io/enforce: restricted\n", f);
	header(f, "v1", "ServiceAccount", NAME);
	rbac(f, s);
	deployment(f, s, image);
	if (fence)
		fence_agent(f, s, image);
	return fflush(f) == 0 && !ferror(f) ? 0 : -1;
}

int manifests_fence_flag(int *argc, char **argv)
{
	int fence = 0, i, j;

	if (*argc < 2 || strcmp(argv[1], "manifests") != 0)   /* the command word comes first */
		return 0;
	for (i = j = 1; i < *argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			while (i < *argc)
				argv[j++] = argv[i++];
			break;
		}
		if (strcmp(argv[i], "--fence") == 0 && i + 1 < *argc &&
		    (strcmp(argv[i + 1], "off") == 0 || strcmp(argv[i + 1], "prefer") == 0 || strcmp(argv[i + 1], "require") == 0)) {
			fence = strcmp(argv[i + 1], "off") != 0;   /* the watcher's mode, given: left for the settings */
			argv[j++] = argv[i++];
			argv[j++] = argv[i];
			continue;
		}
		if (strcmp(argv[i], "--fence") == 0) {
			fence = 1;
			continue;   /* standing alone: asked for, the watcher's mode left at its default */
		}
		if (strncmp(argv[i], "--fence=", 8) == 0)
			fence = strcmp(argv[i] + 8, "off") != 0;
		argv[j++] = argv[i];
	}
	argv[j] = NULL;
	*argc = j;
	return fence;
}
