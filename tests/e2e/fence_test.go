package e2e

// The fence (issue 23, docs/fence.md) against the real control plane. Each case has its own
// fence namespace (so its agents are one another's only peers), its own three nodes with
// simulated kubelets, one agent process per node (`noderecover fence`, the exec action) and
// its own watcher. Every agent reaches kube-apiserver through its own fault proxy, so it can
// be cut off alone, and is reached by its peers through another (its advertised address), so
// it can be cut off from them too. A node's kubelet serves a small health endpoint (what the
// agent's --fence-kubelet-url reads); its "pods" run while that endpoint answers.
//
// The exec action is a shell script that appends the time it ran to a record file; the test
// sees the line and stops that node's kubelet: heartbeats and health endpoint, the node's
// workloads gone. The safety assertions read only the record and the apiserver's audit log:
// no write of the watcher's on a node (its taint) is received before that node's fence
// record; no agent fences while the control plane is out of its reach.
//
// The cases run in parallel on the shared control plane. Each watcher sees every node, so the
// nodes of the other cases carry the label this case's watcher is given as --exclude-label
// (never tainted or deleted): each watcher acts on its own case only, whatever its --fence.

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The agents' timings: short, so a case takes seconds. The safe time they publish is
// renew + after + isolated + exec timeout + the margin for checks of up to 7 s, 29 s
// (docs/fence.md) = 42 s.
const (
	fenceCheck       = "1s"
	fenceAfter       = 3 * time.Second
	fenceIsolated    = 3 * time.Second
	fenceRenew       = 5 * time.Second
	fenceExecTimeout = 2 * time.Second
	fenceSafe        = fenceRenew + fenceAfter + fenceIsolated + fenceExecTimeout + 29*time.Second
	fenceMinSafe     = "5s" // the watcher's floor, below the agents' S: the Lease's S counts
	fenceTaintAfter  = 2    // the watchers' --taint-after, seconds
	// The prune cases' --prune-after, seconds: past the taint threshold and before a fenced
	// node's taint (Unknown→taint about 7.6 s in (d)), so a prune that ignored the fence would
	// delete the node before its taint, in both cases.
	fencePruneAfter = 4

	fenceLeasePrefix = "noderecover-fence-"
	annoRequest      = "noderecover.io/fence-request"
	annoFencing      = "noderecover.io/fencing"
	annoSafe         = "noderecover.io/fence-safe-seconds"
	fenceExcludePfx  = "e2e.noderecover.io/not-"
)

// The cases; each name is its namespace's suffix and its nodes' prefix.
var fenceCaseNames = []string{"a", "b", "c", "d", "e", "g", "pk", "pf", "mfoff", "mfout"}

// ---- a node: kubelet, health endpoint, agent, proxies, fence record ----

// healthz is the kubelet's local health port (10248 on a real node): 200 while the kubelet
// runs; stopped, its port refuses connections as a dead kubelet's does.
type healthz struct {
	addr string
	mu   sync.Mutex
	srv  *http.Server
}

func startHealthz() (*healthz, error) {
	h := &healthz{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	h.addr = ln.Addr().String()
	h.serve(ln)
	return h, nil
}

func (h *healthz) serve(ln net.Listener) {
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("ok"))
	})}
	h.mu.Lock()
	h.srv = srv
	h.mu.Unlock()
	go srv.Serve(ln)
}

func (h *healthz) stop() {
	h.mu.Lock()
	srv := h.srv
	h.srv = nil
	h.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
}

// restart listens on the same address again (the kubelet back after a reboot).
func (h *healthz) restart() error {
	ln, err := net.Listen("tcp", h.addr)
	if err != nil {
		return err
	}
	h.serve(ln)
	return nil
}

var (
	agentPortMu   sync.Mutex
	agentPortNext = 20000 + os.Getpid()%5000
)

// agentPort picks a port for an agent to listen on. The agent binds it only when it starts,
// so a port freePort found free (bound and closed) could be taken meanwhile by an outbound
// connection of the cases running beside it; this one comes from below the ephemeral range
// (32768 up, Linux's default), where only listeners bind, tried before it is handed out.
func agentPort() (int, error) {
	agentPortMu.Lock()
	defer agentPortMu.Unlock()
	for tries := 0; tries < 1000; tries++ {
		p := agentPortNext
		agentPortNext++
		if agentPortNext >= 32000 {
			agentPortNext = 20000
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		l.Close()
		return p, nil
	}
	return 0, fmt.Errorf("no free port for an agent between 20000 and 32000")
}

type fenceNode struct {
	name      string
	fc        *fenceCase
	health    *healthz
	apiProxy  *faultProxy // the agent's way to kube-apiserver
	peerProxy *faultProxy // the peers' way to the agent (its advertised address)
	listen    string      // where the agent listens
	secret    string      // its peer secret file
	record    string      // the exec action's record file
	agent     *watcher

	mu       sync.Mutex
	fences   []time.Time // each run of the action, by the script's clock (this host's)
	handled  int         // runs whose kubelet and pods the test has stopped
	stopSeen chan struct{}
}

// fenceTimes returns the records of the action's runs so far.
func (n *fenceNode) fenceTimes() []time.Time {
	n.readRecord()
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]time.Time(nil), n.fences...)
}

func (n *fenceNode) readRecord() {
	b, err := os.ReadFile(n.record)
	if err != nil {
		return
	}
	var ts []time.Time
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		ns, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
		if err != nil {
			continue
		}
		ts = append(ts, time.Unix(0, ns))
	}
	n.mu.Lock()
	n.fences = ts
	n.mu.Unlock()
}

// follow stops the node's kubelet and its pods as soon as the action has run (it polls the
// record: the action itself lives in another process).
func (n *fenceNode) follow(k *kubelets) {
	for {
		select {
		case <-n.stopSeen:
			return
		case <-time.After(50 * time.Millisecond):
		}
		runs := len(n.fenceTimes())
		n.mu.Lock()
		fresh := runs > n.handled
		n.handled = runs
		n.mu.Unlock()
		if fresh {
			n.health.stop()
			k.stop(n.name)
		}
	}
}

// cut takes the node off the network's way to kube-apiserver: its kubelet's heartbeats stop
// (the simulated kubelet talks to the API directly) and its agent's proxy holds every byte.
// Its pods run on: the health endpoint still answers.
func (n *fenceNode) cut(k *kubelets) {
	k.stop(n.name)
	n.apiProxy.set(proxyStall)
}

func (n *fenceNode) leaseName() string { return fenceLeasePrefix + n.name }

// ---- a case: namespace, accounts, nodes, agents, watcher ----

type fenceCase struct {
	name    string
	ns      string
	c       *cluster
	k       *kubelets
	nodes   []*fenceNode
	watcher *watcher
	wtoken  string
	atoken  string
	script  string
	started time.Time
}

func (fc *fenceCase) watcherUser() string { return saUser(fc.ns, "watcher") }

// fenceRBAC makes what the agents and the watchers need, as the issue describes them: the
// agent its own Leases in its namespace; the watcher the nodes, Events, and the fence Leases.
// The test grants them itself: `noderecover manifests --fence` is checked by its own test.
func fenceRBAC(t *testing.T, c *cluster) {
	ctx := context.Background()
	roles := []*rbacv1.ClusterRole{
		{ObjectMeta: metav1.ObjectMeta{Name: "e2e-fence-watcher"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch", "patch"}},
			{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch", "update"}},
			{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch", "update"}},
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch", "patch", "update"}},
		}},
		{ObjectMeta: metav1.ObjectMeta{Name: "e2e-fence-agent"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		}},
		// bound only to the prune cases' watchers: the others can delete nothing
		{ObjectMeta: metav1.ObjectMeta{Name: "e2e-fence-prune"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"delete"}},
		}},
	}
	for _, r := range roles {
		if _, err := c.cs.RbacV1().ClusterRoles().Create(ctx, r, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}

func newFenceCase(t *testing.T, c *cluster, name, script string) *fenceCase {
	ctx := context.Background()
	fc := &fenceCase{name: name, ns: "fence-" + name, c: c, k: newKubelets(c.cs), script: script}
	if _, err := c.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fc.ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, sa := range []string{"watcher", "agent"} {
		if _, err := c.cs.CoreV1().ServiceAccounts(fc.ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	subject := func(sa string) []rbacv1.Subject {
		return []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: fc.ns}}
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "e2e-fence-watcher-" + name},
		RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "e2e-fence-watcher"}, Subjects: subject("watcher")}
	if _, err := c.cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "e2e-fence-agent", Namespace: fc.ns},
		RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "e2e-fence-agent"}, Subjects: subject("agent")}
	if _, err := c.cs.RbacV1().RoleBindings(fc.ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	fc.wtoken, _ = saToken(t, c, fc.ns, "watcher")
	fc.atoken, _ = saToken(t, c, fc.ns, "agent")
	t.Cleanup(func() { fc.k.removeAll(context.Background()) })
	return fc
}

// addNodes registers the case's nodes (one a secret), heartbeating, each with its health endpoint,
// proxies and record; secrets are the peer secret files, one per node (the same file for all,
// unless a case wants its peers unable to understand one another).
func (fc *fenceCase) addNodes(t *testing.T, secrets []string) {
	ctx := context.Background()
	labels := map[string]string{}
	for _, other := range fenceCaseNames {
		if other != fc.name {
			labels[fenceExcludePfx+other] = "true"
		}
	}
	for i := range secrets {
		n := &fenceNode{name: "fence-" + fc.name + "-" + string(rune('a'+i)), fc: fc, secret: secrets[i], stopSeen: make(chan struct{})}
		n.record = filepath.Join(fc.c.dir, "fence-record-"+n.name)
		if _, err := fc.k.add(ctx, nodeSpec{name: n.name, alive: true, labels: labels}); err != nil {
			t.Fatal(err)
		}
		var err error
		if n.health, err = startHealthz(); err != nil {
			t.Fatal(err)
		}
		port, err := agentPort()
		if err != nil {
			t.Fatal(err)
		}
		n.listen = fmt.Sprintf("127.0.0.1:%d", port)
		if n.apiProxy, err = startFaultProxy(n.name+"-api", strings.TrimPrefix(fc.c.server, "https://")); err != nil {
			t.Fatal(err)
		}
		if n.peerProxy, err = startFaultProxy(n.name+"-peer", n.listen); err != nil {
			t.Fatal(err)
		}
		go n.follow(fc.k)
		t.Cleanup(func() {
			close(n.stopSeen)
			n.health.stop()
			n.apiProxy.close()
			n.peerProxy.close()
		})
		fc.nodes = append(fc.nodes, n)
	}
}

// removable lets the case's watcher delete nodes and labels its node under test (the first)
// removable: the prune cases'.
func (fc *fenceCase) removable(t *testing.T) {
	ctx := context.Background()
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "e2e-fence-prune-" + fc.name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "e2e-fence-prune"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "watcher", Namespace: fc.ns}}}
	if _, err := fc.c.cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	patch := []byte(`{"metadata":{"labels":{"` + pruneLabel + `":"true"}}}`)
	if _, err := fc.c.cs.CoreV1().Nodes().Patch(ctx, fc.nodes[0].name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// agentArgs are `noderecover fence` for node n with the case's timings (after and isolated
// may be longer, for the must-fail case that needs a slow fence).
func (fc *fenceCase) agentArgs(n *fenceNode, after, isolated time.Duration) []string {
	return []string{"fence",
		"--server", "https://" + n.apiProxy.addr(), "--ca-file", fc.c.caFile, "--token-file", fc.atoken,
		"--self-node", n.name, "--fence-namespace", fc.ns,
		"--fence-check", fenceCheck, "--fence-after", after.String(), "--fence-isolated-after", isolated.String(),
		"--fence-renew", fenceRenew.String(),
		"--fence-action", "exec", "--fence-exec", fc.script, "--fence-exec-timeout", fenceExecTimeout.String(),
		"--fence-kubelet-url", "http://" + n.health.addr + "/healthz",
		"--fence-listen", n.listen, "--fence-address", n.peerProxy.addr(),
		"--fence-peer-secret-file", n.secret,
	}
}

// startAgents runs the nodes' agents one after the other, each once the one before is armed
// (its Lease carries its safe time), and returns the safe time they published. An agent lists
// its peers at its start and every 5 minutes, so the second node's starts first and knows no
// peer, as the first agent of a DaemonSet's rollout; the third's knows one; the node under
// test (the first) starts last and knows both; any further nodes' start after it.
func (fc *fenceCase) startAgents(t *testing.T, after, isolated time.Duration) time.Duration {
	var safe time.Duration
	for _, n := range append([]*fenceNode{fc.nodes[1], fc.nodes[2], fc.nodes[0]}, fc.nodes[3:]...) {
		n.agent = startWatcher(t, fc.c, "fence-agent-"+n.name, fc.agentArgs(n, after, isolated)...)
		l := fc.waitArmed(t, n, 20*time.Second)
		s, _ := strconv.Atoi(l.Annotations[annoSafe])
		if safe == 0 {
			safe = time.Duration(s) * time.Second
		}
	}
	// Each agent knows all its peers before the case begins: an agent lists them every 30 s in
	// its first 5 minutes, and one that knows fewer than there are counts its majority wrong
	// (docs/fence.md, Peers: the rollout's window, a limit said in the README's Risks).
	for _, n := range fc.nodes {
		want := len(fc.nodes) - 1
		poll(t, fc.c, "the agent of "+n.name+" knowing its "+strconv.Itoa(want)+" peers", 45*time.Second, func() bool {
			m := peersLine.FindAllStringSubmatch(n.agent.log(), -1)
			return len(m) > 0 && m[len(m)-1][1] == strconv.Itoa(want)
		})
	}
	return safe
}

// The agent's line each time it lists its peers.
var peersLine = regexp.MustCompile(`Peers: (\d+) other fence agents`)

func (fc *fenceCase) lease(t *testing.T, n *fenceNode) (*coordinationv1.Lease, error) {
	return fc.c.cs.CoordinationV1().Leases(fc.ns).Get(context.Background(), n.leaseName(), metav1.GetOptions{})
}

func (fc *fenceCase) waitArmed(t *testing.T, n *fenceNode, timeout time.Duration) *coordinationv1.Lease {
	t.Helper()
	var l *coordinationv1.Lease
	poll(t, fc.c, "the agent of "+n.name+" armed (its Lease "+fc.ns+"/"+n.leaseName()+" with "+annoSafe+")", timeout, func() bool {
		if n.agent.exited() {
			t.Fatalf("the agent of %s exited: %v\n%s", n.name, n.agent.err, n.agent.log())
		}
		got, err := fc.lease(t, n)
		if err != nil {
			return false
		}
		if _, ok := got.Annotations[annoSafe]; !ok {
			return false
		}
		l = got
		return true
	})
	return l
}

// startWatcherFence runs the case's watcher with --fence mode (and extra flags: the prune's).
func (fc *fenceCase) startWatcherFence(t *testing.T, mode string, extra ...string) {
	fc.started = time.Now()
	fc.watcher = startWatcher(t, fc.c, "fence-watcher-"+fc.name, runArgs(fc.c, fc.wtoken, append([]string{
		"--self-node", "fence-" + fc.name + "-self", "--taint-after", strconv.Itoa(fenceTaintAfter), "--poll", "1",
		"--fence", mode, "--fence-namespace", fc.ns, "--fence-min-safe", fenceMinSafe,
		"--exclude-label", fenceExcludePfx + fc.name}, extra...)...)...)
}

// ---- what the audit log says ----

// nodeWrites are the watcher's answered writes on node since the case began (its taints and
// clears; the watcher writes nothing else on a node), in order.
func (fc *fenceCase) nodeWrites(t *testing.T, node string) []auditEvent {
	var out []auditEvent
	for _, ev := range auditEvents(t, fc.c, fc.watcherUser(), fc.started) {
		if ev.ObjectRef == nil || ev.ObjectRef.Resource != "nodes" || ev.ObjectRef.Name != node || ev.Verb == "get" ||
			ev.Verb == "list" || ev.Verb == "watch" || ev.ResponseStatus == nil || ev.ResponseStatus.Code >= 300 {
			continue
		}
		out = append(out, ev)
	}
	return out
}

// requestWrites are the watcher's answered writes on node's fence Lease (its requests).
func (fc *fenceCase) requestWrites(t *testing.T, node string) []auditEvent {
	var out []auditEvent
	for _, ev := range auditEvents(t, fc.c, fc.watcherUser(), fc.started) {
		if ev.ObjectRef == nil || ev.ObjectRef.Resource != "leases" || ev.ObjectRef.Name != fenceLeasePrefix+node ||
			(ev.Verb != "patch" && ev.Verb != "update") || ev.ResponseStatus == nil || ev.ResponseStatus.Code >= 300 {
			continue
		}
		out = append(out, ev)
	}
	return out
}

// taintBeforeFence is the safety assertion: "" when every write of the watcher on the node
// was received after the node's first fence record, else what broke it. A taint with no
// fence record at all breaks it too.
func taintBeforeFence(node string, writes []auditEvent, fences []time.Time) string {
	for _, w := range writes {
		if len(fences) == 0 {
			return fmt.Sprintf("the watcher wrote %s (%s, received %s) and the node has no fence record: it was tainted while its pods ran",
				node, w.Verb, w.RequestReceivedTimestamp.Format(time.RFC3339Nano))
		}
		if w.RequestReceivedTimestamp.Before(fences[0]) {
			return fmt.Sprintf("the watcher's write on %s was received at %s, %s before the node's fence at %s: it was tainted while its pods ran",
				node, w.RequestReceivedTimestamp.Format(time.RFC3339Nano), fmtSeconds(fences[0].Sub(w.RequestReceivedTimestamp)),
				fences[0].Format(time.RFC3339Nano))
		}
	}
	return ""
}

// fencedDuringOutage is the other assertion: "" when none of nodes fenced, else which did.
func fencedDuringOutage(nodes []*fenceNode) string {
	var fenced []string
	for _, n := range nodes {
		if f := n.fenceTimes(); len(f) > 0 {
			fenced = append(fenced, fmt.Sprintf("%s at %s", n.name, f[0].Format(time.RFC3339Nano)))
		}
	}
	if len(fenced) == 0 {
		return ""
	}
	return "fenced while the control plane was out of every agent's reach: " + strings.Join(fenced, ", ")
}

// waitTaint waits for the watcher's first taint of node and returns its write from the audit
// log. It watches the Node (cheap) and reads the audit log once the taint is there.
func (fc *fenceCase) waitTaint(t *testing.T, node string, timeout time.Duration) auditEvent {
	t.Helper()
	poll(t, fc.c, "the watcher's taint of "+node, timeout, func() bool {
		if fc.watcher.exited() {
			t.Fatalf("the watcher exited: %v", fc.watcher.err)
		}
		return hasOurTaint(getNode(t, fc.c, node))
	})
	for _, w := range fc.nodeWrites(t, node) {
		if strings.Contains(string(w.RequestObject), oosKey) {
			return w
		}
	}
	t.Fatalf("%s carries the out-of-service taint and the audit log has no write of %s adding it", node, fc.watcherUser())
	return auditEvent{}
}

func (fc *fenceCase) waitFence(t *testing.T, n *fenceNode, timeout time.Duration) time.Time {
	t.Helper()
	var at time.Time
	poll(t, fc.c, "the fence of "+n.name, timeout, func() bool {
		if f := n.fenceTimes(); len(f) > 0 {
			at = f[0]
			return true
		}
		return false
	})
	return at
}

// ---- plan's FENCE column ----

// planFence runs `noderecover plan` as the case's watcher and returns node's FENCE cell.
func (fc *fenceCase) planFence(t *testing.T, mode, node string) string {
	t.Helper()
	return fenceCell(fc.plan(t, mode), node)
}

// plan runs `noderecover plan` as the case's watcher (with extra flags) and returns its table.
func (fc *fenceCase) plan(t *testing.T, mode string, extra ...string) string {
	t.Helper()
	args := append([]string{"plan"}, connArgs(fc.c, fc.wtoken)...)
	args = append(args, "--self-node", "fence-"+fc.name+"-self", "--taint-after", strconv.Itoa(fenceTaintAfter),
		"--fence", mode, "--fence-namespace", fc.ns, "--fence-min-safe", fenceMinSafe,
		"--exclude-label", fenceExcludePfx+fc.name)
	args = append(args, extra...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, noderecoverBin(t), args...)
	cmd.Env = cleanEnv()
	out, err := cmd.CombinedOutput()
	t.Logf("noderecover %s -> %v\n%s", strings.Join(args, " "), err, out)
	return string(out)
}

// fenceCell finds node's row in a plan table and returns its FENCE column ("" if none): the
// column runs from the header's FENCE to the next header word.
func fenceCell(table, node string) string {
	lines := strings.Split(table, "\n")
	for i, h := range lines {
		at := strings.Index(h, "FENCE")
		if !strings.HasPrefix(h, "NAME") || at < 0 {
			continue
		}
		end := -1
		if rest := h[at+len("FENCE"):]; strings.TrimLeft(rest, " ") != "" {
			end = at + len("FENCE") + (len(rest) - len(strings.TrimLeft(rest, " ")))
		}
		for _, row := range lines[i+1:] {
			f := strings.Fields(row)
			if len(f) == 0 || f[0] != node || len(row) <= at {
				continue
			}
			if end < 0 || end > len(row) {
				return strings.TrimSpace(row[at:])
			}
			return strings.TrimSpace(row[at:end])
		}
	}
	return ""
}

// ---- the test ----

// fenceScript writes the exec action: it appends the time it ran (ns since the epoch, this
// host's clock) to fence-record-NODE in dir, then takes a moment, as an action does.
func fenceScript(t *testing.T, dir string) string {
	path := filepath.Join(dir, "fence-action.sh")
	script := "#!/bin/sh\n" +
		"# the e2e's fence action: record when it ran; the test then stops the node's kubelet\n" +
		"date +%s%N >> \"$(dirname \"$0\")/fence-record-$1\"\n" +
		"sleep 0.3\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func writeSecret(t *testing.T, dir, name string) string {
	path := filepath.Join(dir, "fence-peer-secret-"+name)
	if err := os.WriteFile(path, []byte(randomToken()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestFence runs the cases of issue 23 in parallel, each on its own nodes.
func TestFence(t *testing.T) {
	c := getCluster(t)
	noderecoverBin(t)
	began := time.Now()
	fenceRBAC(t, c)
	script := fenceScript(t, c.dir)
	// A prune needs 3 Ready etcd members in the list (README, Prune); these count for every
	// case's watcher and carry every case's exclude label, so none acts on them.
	members := newKubelets(c.cs)
	t.Cleanup(func() { members.removeAll(context.Background()) })
	memberLabels := map[string]string{etcdLabel: "true"}
	for _, name := range fenceCaseNames {
		memberLabels[fenceExcludePfx+name] = "true"
	}
	for i := 1; i <= 3; i++ {
		if _, err := members.add(context.Background(), nodeSpec{name: fmt.Sprintf("fence-etcd-%d", i), alive: true, labels: memberLabels}); err != nil {
			t.Fatal(err)
		}
	}
	setup := func(t *testing.T, name string, distinctSecrets bool) *fenceCase {
		fc := newFenceCase(t, c, name, script)
		s := writeSecret(t, c.dir, name)
		secrets := []string{s, s, s}
		if name == "g" {
			secrets = []string{s, s, s, s, s}
		}
		if distinctSecrets {
			secrets = []string{writeSecret(t, c.dir, name+"-a"), writeSecret(t, c.dir, name+"-b"), writeSecret(t, c.dir, name+"-c")}
		}
		fc.addNodes(t, secrets)
		return fc
	}
	t.Run("cases", func(t *testing.T) {
		t.Run("a_isolated_fences_then_taint", func(t *testing.T) { t.Parallel(); fenceCutOff(t, setup(t, "a", false)) })
		t.Run("b_cut_from_api_fences_on_request", func(t *testing.T) { t.Parallel(); fenceOnRequest(t, setup(t, "b", false)) })
		t.Run("c_control_plane_outage_no_fence", func(t *testing.T) { t.Parallel(); fenceOutage(t, setup(t, "c", false), false) })
		t.Run("d_kubelet_dead_fence_taint_then_f_back", func(t *testing.T) { t.Parallel(); fenceKubeletDead(t, setup(t, "d", false)) })
		t.Run("e_agent_killed_require_never_tainted", func(t *testing.T) { t.Parallel(); fenceAgentKilled(t, setup(t, "e", false)) })
		t.Run("g_partition_with_agents_it_knows", func(t *testing.T) { t.Parallel(); fencePartition(t, setup(t, "g", false)) })
		t.Run("pk_agent_killed_require_never_pruned", func(t *testing.T) { t.Parallel(); fencePruneAgentKilled(t, setup(t, "pk", false)) })
		t.Run("pf_pruned_only_after_fence_and_taint", func(t *testing.T) { t.Parallel(); fencePruneAfterFence(t, setup(t, "pf", false)) })
		t.Run("mustfail_watcher_without_safe_time", func(t *testing.T) { t.Parallel(); fenceMustFailOff(t, setup(t, "mfoff", false)) })
		t.Run("mustfail_agent_fences_in_outage", func(t *testing.T) { t.Parallel(); fenceOutage(t, setup(t, "mfout", true), true) })
	})
	measure(t, "fence: all cases %s", fmtSeconds(time.Since(began)))
}

// (a) A node cut off from kube-apiserver and from its peers (both ways) fences itself once
// isolated, and the watcher's taint (prefer: the node has an armed agent) comes after.
func fenceCutOff(t *testing.T, fc *fenceCase) {
	safe := fc.startAgents(t, fenceAfter, fenceIsolated)
	if safe != fenceSafe {
		t.Errorf("the agents publish a safe time of %s, want %s (renew + after + isolated + exec timeout + 29 s)", safe, fenceSafe)
	}
	fc.startWatcherFence(t, "prefer")
	n := fc.nodes[0]
	cut := time.Now()
	n.cut(fc.k)
	for _, p := range fc.nodes {
		p.peerProxy.set(proxyStall)
	}
	fence := fc.waitFence(t, n, 30*time.Second)
	unknown := waitUnknown(t, fc.c, n.name)
	taint := fc.waitTaint(t, n.name, 60*time.Second)
	if why := taintBeforeFence(n.name, fc.nodeWrites(t, n.name), n.fenceTimes()); why != "" {
		t.Error(why)
	}
	if d := fence.Sub(cut); d < fenceAfter+fenceIsolated-time.Second {
		t.Errorf("%s fenced %s after it was cut off, sooner than after + isolated (%s)", n.name, fmtSeconds(d), fenceAfter+fenceIsolated)
	}
	fc.checkOthersUnfenced(t, n)
	measure(t, "fence (a) isolated: cut→fence %s, Unknown→taint %s, fence→taint %s",
		fmtSeconds(fence.Sub(cut)), fmtSeconds(taint.RequestReceivedTimestamp.Sub(unknown)), fmtSeconds(taint.RequestReceivedTimestamp.Sub(fence)))
}

// (b) Cut off from kube-apiserver only: its peers answer that they reach it and, once the
// watcher has written the request on the node's Lease, that a fence was requested; the agent
// fences then, not before, and the taint comes after the fence.
func fenceOnRequest(t *testing.T, fc *fenceCase) {
	fc.startAgents(t, fenceAfter, fenceIsolated)
	// prefer: the test's agents fence by exec, whose silence under require proves nothing (only
	// a watchdog's does), so require would never taint a node cut off from kube-apiserver
	fc.startWatcherFence(t, "prefer")
	n := fc.nodes[0]
	cut := time.Now()
	n.cut(fc.k)
	unknown := waitUnknown(t, fc.c, n.name)
	fence := fc.waitFence(t, n, 60*time.Second)
	taint := fc.waitTaint(t, n.name, 60*time.Second)
	reqs := fc.requestWrites(t, n.name)
	if len(reqs) == 0 {
		t.Fatalf("%s fenced at %s and no request of the watcher's on %s/%s is in the audit log", n.name, fence.Format(time.RFC3339Nano), fc.ns, n.leaseName())
	}
	if fence.Before(reqs[0].RequestReceivedTimestamp) {
		t.Errorf("%s fenced at %s, before the watcher's request (received %s): its peers answered, so only the request may fence it",
			n.name, fence.Format(time.RFC3339Nano), reqs[0].RequestReceivedTimestamp.Format(time.RFC3339Nano))
	}
	if why := taintBeforeFence(n.name, fc.nodeWrites(t, n.name), n.fenceTimes()); why != "" {
		t.Error(why)
	}
	fc.checkOthersUnfenced(t, n)
	measure(t, "fence (b) on request via peers: cut→Unknown %s, Unknown→request %s, request→fence %s, fence→taint %s",
		fmtSeconds(unknown.Sub(cut)), fmtSeconds(reqs[0].RequestReceivedTimestamp.Sub(unknown)),
		fmtSeconds(fence.Sub(reqs[0].RequestReceivedTimestamp)), fmtSeconds(taint.RequestReceivedTimestamp.Sub(fence)))
}

// (c) Every agent cut off from kube-apiserver at once for well past after + isolated, their
// peers reachable: a control-plane outage by the majority rule, and nobody fences. With
// distinctSecrets (the must-fail), no agent can understand its peers' answers, so each is
// isolated and fences: the same assertion must then catch it.
func fenceOutage(t *testing.T, fc *fenceCase, distinctSecrets bool) {
	fc.startAgents(t, fenceAfter, fenceIsolated)
	fc.startWatcherFence(t, "prefer")
	for _, n := range fc.nodes {
		n.apiProxy.set(proxyStall)
	}
	hold := fenceAfter + fenceIsolated + 8*time.Second
	time.Sleep(hold)
	for _, n := range fc.nodes {
		n.apiProxy.set(proxyPass)
	}
	time.Sleep(3 * time.Second)
	why := fencedDuringOutage(fc.nodes)
	if distinctSecrets {
		if why == "" {
			t.Errorf("must-fail: agents that could not understand their peers were cut off from the API for %s and none fenced: "+
				"either the isolation rule is broken or the outage assertion cannot fail", hold)
		} else {
			t.Logf("must-fail, as expected: the outage assertion caught it: %s", why)
		}
		return
	}
	if why != "" {
		t.Error(why)
	}
}

// (d) The kubelet dies under a healthy agent (its health port refuses): the agent fences for
// the kubelet, writing noderecover.io/fencing first; the node goes Unknown and is tainted after
// the fence. (f) Then the node comes back (a new agent, the kubelet again): the taint and our
// annotation are cleared as without the fence, the request is taken off the Lease, the agent
// takes its fencing mark off, and the request that fenced it does not fence it again.
func fenceKubeletDead(t *testing.T, fc *fenceCase) {
	fc.startAgents(t, fenceAfter, fenceIsolated)
	fc.startWatcherFence(t, "prefer")
	n := fc.nodes[0]
	died := time.Now()
	n.health.stop()
	fc.k.stop(n.name)
	fence := fc.waitFence(t, n, 30*time.Second)
	if l, err := fc.lease(t, n); err != nil || l.Annotations[annoFencing] == "" {
		t.Errorf("%s fenced while it reached the API server and its Lease does not carry %s: %v", n.name, annoFencing, err)
	}
	unknown := waitUnknown(t, fc.c, n.name)
	taint := fc.waitTaint(t, n.name, 60*time.Second)
	if why := taintBeforeFence(n.name, fc.nodeWrites(t, n.name), n.fenceTimes()); why != "" {
		t.Error(why)
	}
	if d := fence.Sub(died); d < fenceAfter-time.Second {
		t.Errorf("%s fenced %s after its kubelet died, sooner than --fence-after %s", n.name, fmtSeconds(d), fenceAfter)
	}
	measure(t, "fence (d) kubelet dead: death→fence %s, death→Unknown %s, Unknown→taint %s, fence→taint %s",
		fmtSeconds(fence.Sub(died)), fmtSeconds(unknown.Sub(died)), fmtSeconds(taint.RequestReceivedTimestamp.Sub(unknown)),
		fmtSeconds(taint.RequestReceivedTimestamp.Sub(fence)))

	// (f) back: the machine rebooted; its agent starts anew, then its kubelet.
	n.agent.kill()
	fencesBefore := len(n.fenceTimes())
	n.agent = startWatcher(t, fc.c, "fence-agent-"+n.name+"-back", fc.agentArgs(n, fenceAfter, fenceIsolated)...)
	if err := n.health.restart(); err != nil {
		t.Fatal(err)
	}
	fc.k.resume(n.name)
	back := waitReady(t, fc.c, n.name)
	cleared := poll(t, fc.c, n.name+" cleared (no out-of-service taint, no annotation)", 30*time.Second, func() bool {
		node := getNode(t, fc.c, n.name)
		_, anno := node.Annotations[ourAnno]
		return !hasOurTaint(node) && !anno
	})
	poll(t, fc.c, "the request and the fencing mark off "+n.leaseName(), 30*time.Second, func() bool {
		l, err := fc.lease(t, n)
		if err != nil {
			return false
		}
		_, req := l.Annotations[annoRequest]
		_, fencing := l.Annotations[annoFencing]
		return !req && !fencing
	})
	time.Sleep(fenceAfter + 3*time.Second) // long enough for a stale request to fence it again
	if got := len(n.fenceTimes()); got != fencesBefore {
		t.Errorf("%s fenced again after it came back (%d fences, %d before): a stale request or its kubelet's start fenced it", n.name, got, fencesBefore)
	}
	measure(t, "fence (f) back: Ready→cleared %s", fmtSeconds(cleared.Sub(back)))
}

// (e) An agent killed (no fence is possible any more), then, later than its safe time, its
// node dies: with --fence=require the node is never tainted, and plan's FENCE column says why.
// (docs/fence.md leaves this open: a watcher that takes the unrenewed Lease for a fence
// taints after S, although nothing fenced.)
func fenceAgentKilled(t *testing.T, fc *fenceCase) {
	fc.startAgents(t, fenceAfter, fenceIsolated)
	fc.startWatcherFence(t, "require")
	n := fc.nodes[0]
	n.agent.kill()
	// The Lease stays as the agent left it. The node stays Ready for longer than the safe time
	// the Lease publishes, so a watcher can tell that the agent stopped renewing while its
	// node was still up (an agent cut off would have fenced by then): it is not armed.
	time.Sleep(fenceSafe + 4*time.Second)
	n.health.stop()
	fc.k.stop(n.name)
	unknown := waitUnknown(t, fc.c, n.name)
	// A watcher that took the unrenewed Lease for a fence would taint at Unknown + threshold +
	// the safe time; look well past that.
	sleepUntil(unknown.Add(time.Duration(fenceTaintAfter)*time.Second + fenceSafe + 8*time.Second))
	if ws := fc.nodeWrites(t, n.name); len(ws) > 0 {
		t.Errorf("--fence=require tainted %s, whose agent had been killed (no fence record: %d): %s %s received %s",
			n.name, len(n.fenceTimes()), ws[0].Verb, ws[0].RequestURI, ws[0].RequestReceivedTimestamp.Format(time.RFC3339Nano))
	}
	if f := n.fenceTimes(); len(f) > 0 {
		t.Errorf("%s has a fence record with its agent killed: the test's action ran", n.name)
	}
	cell := fc.planFence(t, "require", n.name)
	// An exec agent's silence proves nothing: plan must say that, not "safe".
	if cell == "" || strings.HasPrefix(cell, "safe") || !strings.Contains(cell, "without watchdog") {
		t.Errorf("plan's FENCE column for %s is %q: want it to say its agent has no watchdog (its silence is no fence)", n.name, cell)
	}
}

// (g) A minority partition: five agents that know one another; three are cut off from
// kube-apiserver together; they still reach one another and the two others. For
// the watcher, who sees three of the cluster's nodes Unknown, far from half, this is no
// outage: it requests the fences and taints after the safe time. So each of the three must
// have fenced first, whatever its two fellows in the partition told it.
func fencePartition(t *testing.T, fc *fenceCase) {
	fc.startAgents(t, fenceAfter, fenceIsolated)
	// prefer: under require the exec agents' silence proves nothing and nothing would be
	// tainted, so the assertion below could not fail
	fc.startWatcherFence(t, "prefer")
	cut := fc.nodes[:3]
	for _, n := range cut {
		n.cut(fc.k)
	}
	unknown := waitUnknown(t, fc.c, cut[0].name)
	sleepUntil(unknown.Add(time.Duration(fenceTaintAfter)*time.Second + fenceSafe + 8*time.Second))
	if fc.watcher.exited() {
		t.Fatalf("the watcher exited: %v", fc.watcher.err)
	}
	for _, n := range cut {
		if why := taintBeforeFence(n.name, fc.nodeWrites(t, n.name), n.fenceTimes()); why != "" {
			t.Error(why)
		}
	}
	for _, n := range fc.nodes[3:] {
		if len(n.fenceTimes()) > 0 {
			t.Errorf("%s fenced though it reached the API server and its kubelet was healthy", n.name)
		}
	}
	for _, n := range cut {
		if f := n.fenceTimes(); len(f) > 0 {
			measure(t, "fence (g) partition: %s cut→fence %s", n.name, fmtSeconds(f[0].Sub(unknown)))
		} else {
			t.Logf("%s did not fence", n.name)
		}
	}
}

// (pk) Pruning on and a removable node whose agent is killed, then its node dies: under
// --fence=require it is never tainted (no fence is possible), so never deleted either. Deleting
// it would let the pod garbage collector remove its pods, unfenced: a prune that ignored the
// fence deletes it at Unknown + --prune-after. Unlike (e), the node dies at once, while the
// killed agent's Lease is still fresh: the watcher requests and waits for a fencing mark.
func fencePruneAgentKilled(t *testing.T, fc *fenceCase) {
	fc.removable(t)
	fc.startAgents(t, fenceAfter, fenceIsolated)
	prune := []string{"--prune-after", strconv.Itoa(fencePruneAfter)}
	fc.startWatcherFence(t, "require", prune...)
	n := fc.nodes[0]
	n.agent.kill()
	n.health.stop()
	fc.k.stop(n.name)
	unknown := waitUnknown(t, fc.c, n.name)
	// A watcher that took the killed agent's unrenewed Lease for a fence would taint at its
	// last renewal (before Unknown) + S, and delete a pass later; look past that.
	sleepUntil(unknown.Add(time.Duration(fencePruneAfter)*time.Second + fenceSafe + 8*time.Second))
	if fc.watcher.exited() {
		t.Fatalf("the watcher exited: %v", fc.watcher.err)
	}
	for _, w := range fc.nodeWrites(t, n.name) {
		t.Errorf("--fence=require with --prune-after %ds: the watcher wrote %s, removable, whose agent had been killed (fence records: %d): %s %s received %s, %s after Unknown",
			fencePruneAfter, n.name, len(n.fenceTimes()), w.Verb, w.RequestURI, w.RequestReceivedTimestamp.Format(time.RFC3339Nano),
			fmtSeconds(w.RequestReceivedTimestamp.Sub(unknown)))
	}
	if !nodeExists(t, fc.c, n.name) {
		t.Fatalf("%s was deleted with its agent killed: its pods went unfenced", n.name)
	}
	table := fc.plan(t, "require", prune...)
	if cell := fenceCell(table, n.name); !strings.Contains(cell, "without watchdog") {
		t.Errorf("plan's FENCE column for %s is %q: want it to say its agent has no watchdog (its silence is no fence)", n.name, cell)
	}
	// plan's action is the watcher's: a taint waiting on the fence, never a deletion (a plan that
	// decided without the fence said "delete now" for this node)
	for _, row := range strings.Split(table, "\n") {
		if f := strings.Fields(row); len(f) > 0 && f[0] == n.name &&
			(strings.Contains(row, "delete now") || !strings.Contains(row, "fencing mark")) {
			t.Errorf("plan's row for %s, whose agent was killed, under require: %q: want a taint that waits on its fencing mark, no deletion", n.name, row)
		}
	}
}

// (pf) Pruning on and a removable node whose kubelet dies under a healthy agent, as (d): the
// agent fences, the node is tainted after the fence, and deleted only after its taint, once
// Unknown (the Ready condition's lastTransitionTime, what the watcher counts from) for
// --prune-after. The threshold is shorter than the wait for the fence, so the taint, not
// the threshold, is what the delete waits for.
func fencePruneAfterFence(t *testing.T, fc *fenceCase) {
	fc.removable(t)
	fc.startAgents(t, fenceAfter, fenceIsolated)
	fc.startWatcherFence(t, "require", "--prune-after", strconv.Itoa(fencePruneAfter))
	n := fc.nodes[0]
	died := time.Now()
	n.health.stop()
	fc.k.stop(n.name)
	fence := fc.waitFence(t, n, 30*time.Second)
	unknown := waitUnknown(t, fc.c, n.name)
	gone := poll(t, fc.c, n.name+" deleted", 60*time.Second, func() bool {
		if fc.watcher.exited() {
			t.Fatalf("the watcher exited: %v", fc.watcher.err)
		}
		return !nodeExists(t, fc.c, n.name)
	})
	ws := fc.nodeWrites(t, n.name)
	if why := taintBeforeFence(n.name, ws, n.fenceTimes()); why != "" {
		t.Error(why)
	}
	var taint, del *auditEvent
	for i := range ws {
		if ws[i].Verb == "delete" && del == nil {
			del = &ws[i]
		}
		if ws[i].Verb == "patch" && taint == nil && strings.Contains(string(ws[i].RequestObject), oosKey) {
			taint = &ws[i]
		}
	}
	if del == nil {
		t.Fatalf("%s is gone and the audit log has no answered DELETE of %s's", n.name, fc.watcherUser())
	}
	if taint == nil {
		t.Fatalf("%s was deleted (received %s, %s after Unknown) and never tainted: its prune did not wait on the fence",
			n.name, del.RequestReceivedTimestamp.Format(time.RFC3339Nano), fmtSeconds(del.RequestReceivedTimestamp.Sub(unknown)))
	}
	if !taint.RequestReceivedTimestamp.Before(del.RequestReceivedTimestamp) {
		t.Errorf("%s was deleted (received %s) before its taint (received %s)", n.name,
			del.RequestReceivedTimestamp.Format(time.RFC3339Nano), taint.RequestReceivedTimestamp.Format(time.RFC3339Nano))
	}
	threshold := unknown.Add(fencePruneAfter * time.Second)
	if del.RequestReceivedTimestamp.Before(threshold) {
		t.Errorf("%s was deleted %s after Unknown, before --prune-after %ds", n.name, fmtSeconds(del.RequestReceivedTimestamp.Sub(unknown)), fencePruneAfter)
	}
	// Once tainted and past the threshold, the next pass deletes it (--poll 1).
	due := threshold
	if taint.RequestReceivedTimestamp.After(due) {
		due = taint.RequestReceivedTimestamp
	}
	if late := del.RequestReceivedTimestamp.Sub(due); late > 10*time.Second {
		t.Errorf("%s was deleted %s after it was tainted and past --prune-after: want a pass later", n.name, fmtSeconds(late))
	}
	measure(t, "fence (pf) prune: death→fence %s, death→Unknown %s, Unknown→taint %s, taint→delete %s, Unknown→gone %s",
		fmtSeconds(fence.Sub(died)), fmtSeconds(unknown.Sub(died)), fmtSeconds(taint.RequestReceivedTimestamp.Sub(unknown)),
		fmtSeconds(del.RequestReceivedTimestamp.Sub(taint.RequestReceivedTimestamp)), fmtSeconds(gone.Sub(unknown)))
}

// The must-fail of (a)'s assertion: a watcher that does not wait for the fence (--fence=off)
// next to an armed agent whose fence is slow taints while the node's pods run, and
// taintBeforeFence must say so.
func fenceMustFailOff(t *testing.T, fc *fenceCase) {
	slow := 12 * time.Second
	fc.startAgents(t, slow, slow)
	fc.startWatcherFence(t, "off")
	n := fc.nodes[0]
	n.cut(fc.k)
	for _, p := range fc.nodes {
		p.peerProxy.set(proxyStall)
	}
	waitUnknown(t, fc.c, n.name)
	fc.waitTaint(t, n.name, 30*time.Second)
	why := taintBeforeFence(n.name, fc.nodeWrites(t, n.name), n.fenceTimes())
	if why == "" {
		t.Errorf("must-fail: a watcher with --fence=off tainted %s next to an agent that fences only after %s, and the assertion saw nothing wrong", n.name, 2*slow)
		return
	}
	t.Logf("must-fail, as expected: the assertion caught it: %s", why)
}

// checkOthersUnfenced: the case's other nodes, healthy all along, never fenced.
func (fc *fenceCase) checkOthersUnfenced(t *testing.T, subject *fenceNode) {
	for _, p := range fc.nodes {
		if p != subject && len(p.fenceTimes()) > 0 {
			t.Errorf("%s fenced though it reached the API server and its kubelet was healthy", p.name)
		}
	}
}

// TestFenceHarness checks the harness alone, without a control plane: the action's script
// records each run, the follower stops the node's health endpoint on a record, plan's FENCE
// cell is read from its column, and taintBeforeFence catches a write before the fence and a
// write with no fence at all.
func TestFenceHarness(t *testing.T) {
	dir := t.TempDir()
	script := fenceScript(t, dir)
	h, err := startHealthz()
	if err != nil {
		t.Fatal(err)
	}
	defer h.stop()
	n := &fenceNode{name: "harness-a", health: h, record: filepath.Join(dir, "fence-record-harness-a"), stopSeen: make(chan struct{})}
	k := newKubelets(nil)
	k.nodes[n.name] = &kubelet{name: n.name}
	go n.follow(k)
	defer close(n.stopSeen)
	get := func() error {
		resp, err := (&http.Client{Timeout: time.Second}).Get("http://" + h.addr + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := get(); err != nil {
		t.Fatalf("health endpoint before the fence: %v", err)
	}
	before := time.Now()
	if out, err := exec.Command(script, n.name).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", script, err, out)
	}
	f := n.fenceTimes()
	if len(f) != 1 || f[0].Before(before.Add(-time.Millisecond)) || f[0].After(time.Now()) {
		t.Fatalf("fence record %v, want one time between %s and now", f, before)
	}
	deadline := time.Now().Add(2 * time.Second)
	for get() == nil {
		if time.Now().After(deadline) {
			t.Fatal("the health endpoint still answers 2s after the fence record")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := h.restart(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if err := get(); err != nil {
		t.Errorf("health endpoint after restart (no new fence): %v", err)
	}

	table := "NAME       READY    FOR  ROLES  FENCE        ACTION\n" +
		"fence-e-a  Unknown  30s  -      no agent     none (fence: no agent)\n" +
		"fence-e-b  True     -    -      safe in 40s  none\n"
	if got := fenceCell(table, "fence-e-a"); got != "no agent" {
		t.Errorf("fenceCell(fence-e-a) = %q, want \"no agent\"", got)
	}
	if got := fenceCell(table, "fence-e-b"); got != "safe in 40s" {
		t.Errorf("fenceCell(fence-e-b) = %q, want \"safe in 40s\"", got)
	}
	if got := fenceCell("NAME  READY  FENCE\nx     True   armed\n", "x"); got != "armed" {
		t.Errorf("fenceCell as the last column = %q, want \"armed\"", got)
	}

	at := func(s float64) time.Time { return before.Add(time.Duration(s * float64(time.Second))) }
	w := func(s float64) auditEvent { return auditEvent{Verb: "patch", RequestReceivedTimestamp: at(s)} }
	if why := taintBeforeFence("x", []auditEvent{w(5)}, []time.Time{at(4)}); why != "" {
		t.Errorf("a taint after the fence was refused: %s", why)
	}
	if why := taintBeforeFence("x", []auditEvent{w(3)}, []time.Time{at(4)}); why == "" {
		t.Error("a taint before the fence passed")
	}
	if why := taintBeforeFence("x", []auditEvent{w(3)}, nil); why == "" {
		t.Error("a taint with no fence at all passed")
	}
	if why := fencedDuringOutage([]*fenceNode{n}); why == "" {
		t.Error("a node with a fence record passed the outage assertion")
	}
}
