package e2e

// The contract's scenarios, against the real control plane. They run in order on one
// control plane, each with its own nodes (removed at its end) and its own watcher.

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Thresholds of the watcher in these scenarios (seconds).
const (
	taintAfter = 4
	pruneAfter = 12
	pollEvery  = 1
)

var (
	resultsMu sync.Mutex
	results   []string
)

// measure records a measured time for the summary printed at the end, and logs it.
func measure(t *testing.T, format string, args ...any) {
	t.Helper()
	line := fmt.Sprintf(format, args...)
	t.Log(line)
	resultsMu.Lock()
	results = append(results, line)
	resultsMu.Unlock()
}

func printResults() {
	resultsMu.Lock()
	defer resultsMu.Unlock()
	if len(results) == 0 {
		return
	}
	fmt.Println("e2e: measured times")
	if theCluster != nil {
		fmt.Printf("  server: kube-apiserver %s, %s; control plane start %.1fs; node monitor grace %s\n",
			theCluster.serverVersion, theCluster.store(), theCluster.startSeconds, nodeMonitorGrace)
	}
	for _, r := range results {
		fmt.Println("  " + r)
	}
}

// TestControlPlane checks the harness itself, no noderecover needed: the control plane
// answers, a heartbeating node stays Ready, a silent one goes Unknown and is tainted
// unreachable by the real node lifecycle controller.
func TestControlPlane(t *testing.T) {
	c := getCluster(t)
	ctx := context.Background()
	t.Logf("server version %s, %s", c.serverVersion, c.store())
	k := newKubelets(c.cs)
	defer k.removeAll(ctx)
	if _, err := k.add(ctx, nodeSpec{name: "cp-alive", alive: true}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := k.add(ctx, nodeSpec{name: "cp-silent"}); err != nil {
		t.Fatal(err)
	}
	ltt := waitUnknown(t, c, "cp-silent")
	measure(t, "control plane: silent node Ready=Unknown %s after its last heartbeat", fmtSeconds(time.Since(start)))
	_ = ltt
	poll(t, c, "cp-silent tainted node.kubernetes.io/unreachable", 20*time.Second, func() bool {
		return hasTaint(getNode(t, c, "cp-silent"), "node.kubernetes.io/unreachable", "", corev1.TaintEffectNoExecute)
	})
	if r := readyOf(getNode(t, c, "cp-alive")); r == nil || r.Status != corev1.ConditionTrue {
		t.Errorf("heartbeating node cp-alive is not Ready: %+v", r)
	}
	if err := k.get("cp-alive").lastErr; err != nil {
		t.Errorf("heartbeat error: %v", err)
	}
}

// TestNodeRecover runs scenarios 1 to 12 in an order that needs the prune binding only
// from scenario 4 on.
func TestNodeRecover(t *testing.T) {
	c := getCluster(t)
	noderecoverBin(t)
	ctx := context.Background()
	t.Logf("server version %s, %s", c.serverVersion, c.store())

	// The ServiceAccount and its permissions come from `noderecover manifests` (what deploy/
	// holds), as a cluster admin or k3s applies them.
	applyManifests(t, c, false)
	if _, err := c.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "e2e"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	// No serviceaccount controller runs; pods need their namespace's default ServiceAccount.
	if _, err := c.cs.CoreV1().ServiceAccounts("e2e").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	tokenFile, token := saToken(t, c, saNamespace, saName)

	t.Run("5a_permissions_without_prune", func(t *testing.T) { permissions(t, c, false) })
	t.Run("1-3_taint_recover_clear", func(t *testing.T) { scenarios123(t, c, tokenFile, token) })
	t.Run("14_events", func(t *testing.T) { scenarioEvents(t, c, tokenFile) })

	applyManifests(t, c, true)
	t.Run("5b_permissions_with_prune", func(t *testing.T) { permissions(t, c, true) })
	t.Run("5c_missing_permissions", func(t *testing.T) { missingPermissions(t, c, tokenFile) })
	t.Run("4_prune", func(t *testing.T) { scenarioPrune(t, c, tokenFile, token) })
	t.Run("6_paging", func(t *testing.T) { scenarioPaging(t, c, tokenFile) })
	t.Run("7_admission_denied", func(t *testing.T) { scenarioAdmissionDenied(t, c, tokenFile) })
	t.Run("8_server_dry_run", func(t *testing.T) { scenarioServerDryRun(t, c, tokenFile) })
	t.Run("9_storm_guard", func(t *testing.T) { scenarioStorm(t, c, tokenFile) })
	t.Run("10_opt_out_label", func(t *testing.T) { scenarioOptOut(t, c, tokenFile) })
	t.Run("11_conflict_retry", func(t *testing.T) { scenarioConflictRetry(t, c, tokenFile) })
	t.Run("12_threshold_wake", func(t *testing.T) { scenarioThreshold(t, c, tokenFile) })
	t.Run("13_leader_election", func(t *testing.T) { scenarioLease(t, c) })
	// Pruning off again is the pruning-off output applied again: the token loses delete.
	applyManifests(t, c, false)
	t.Run("5d_permissions_after_pruning_off_again", func(t *testing.T) { permissions(t, c, false) })
}

// permissions: scenario 5, what the ServiceAccount of `noderecover manifests` may do,
// asked of the real authorizer.
func permissions(t *testing.T, c *cluster, prune bool) {
	for _, verb := range []string{"get", "list", "patch"} {
		if !canI(t, c, saNamespace, saName, verb, "nodes") {
			t.Errorf("ServiceAccount %s/%s cannot %s nodes", saNamespace, saName, verb)
		}
	}
	if got := canI(t, c, saNamespace, saName, "delete", "nodes"); got != prune {
		t.Errorf("ServiceAccount can delete nodes: %v, want %v (prune binding applied: %v)", got, prune, prune)
	}
	// watch nodes: granted exactly when the binary follows a watch (issue 15)
	if got, want := canI(t, c, saNamespace, saName, "watch", "nodes"), binaryWatches(t); got != want {
		t.Errorf("ServiceAccount can watch nodes: %v, want %v (the binary knows --watch: %v)", got, want, want)
	}
	for _, p := range [][2]string{{"update", "nodes"}, {"create", "nodes"}, {"list", "pods"}, {"delete", "pods"}, {"get", "secrets"}} {
		if canI(t, c, saNamespace, saName, p[0], p[1]) {
			t.Errorf("ServiceAccount can %s %s; it should have only get, list, patch (and delete) on nodes", p[0], p[1])
		}
	}
	t.Logf("SubjectAccessReview: get/list/patch nodes allowed, delete nodes allowed=%v, nothing else", prune)
}

// scenarios123: 1 (the pod stuck Terminating is force-deleted after our taint),
// 2 (the node returns: our taint and annotation go, the rest stays), 3 (healthy nodes,
// the watcher's own node and an operator's taint are left alone).
func scenarios123(t *testing.T, c *cluster, tokenFile, token string) {
	ctx := context.Background()
	k := newKubelets(c.cs)
	defer k.removeAll(ctx)
	rec := recordNodes(t, c)
	foo := corev1.Taint{Key: "example.com/foo", Value: "bar", Effect: corev1.TaintEffectNoSchedule}
	operatorOOS := corev1.Taint{Key: oosKey, Value: oosValue, Effect: corev1.TaintEffectNoExecute}
	const (
		a    = "s1-a"
		b    = "s1-b"
		cc   = "s1-c"
		self = "s1-self"
		o    = "s1-operator"
		r    = "s1-removable"
	)
	specs := []nodeSpec{
		{name: a, alive: true, taints: []corev1.Taint{foo}},
		{name: b, alive: true},
		{name: cc, alive: true},
		{name: self},
		{name: o, taints: []corev1.Taint{operatorOOS}},
		{name: r, labels: map[string]string{pruneLabel: "true"}},
	}
	for _, s := range specs {
		if _, err := k.add(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	started := time.Now()
	// Four of these six nodes are silent on purpose, each for its own rule: more than the
	// storm guard's default 50%, which has tests of its own; here it is off.
	w := startWatcher(t, c, "s1-3", runArgs(c, tokenFile,
		"--self-node", self, "--taint-after", strconv.Itoa(taintAfter), "--poll", strconv.Itoa(pollEvery),
		"--max-unknown", "100%")...)

	// 1. A pod bound to a, deleted, then a stops: the pod stays Terminating.
	grace := int64(1)
	f := false
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "stuck", Namespace: "e2e"},
		Spec: corev1.PodSpec{
			NodeName:                      a,
			TerminationGracePeriodSeconds: &grace,
			AutomountServiceAccountToken:  &f,
			Containers:                    []corev1.Container{{Name: "c", Image: "registry.invalid/pause:never-pulled"}},
		},
	}
	if _, err := c.cs.CoreV1().Pods("e2e").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitReady(t, c, a)
	k.stop(a)
	stoppedAt := time.Now()
	if err := c.cs.CoreV1().Pods("e2e").Delete(ctx, "stuck", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	lttA := waitUnknown(t, c, a)
	unknownSeen := time.Now()
	measure(t, "scenario 1: %s Ready=Unknown %s after its last heartbeat (lastTransitionTime %s)", a, fmtSeconds(unknownSeen.Sub(stoppedAt)), lttA.UTC().Format(time.RFC3339))
	p, err := c.cs.CoreV1().Pods("e2e").Get(ctx, "stuck", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the deleted pod should still exist (Terminating) while %s is silent: %v", a, err)
	}
	if p.DeletionTimestamp == nil || !p.DeletionTimestamp.Time.Before(time.Now()) {
		t.Fatalf("pod should be Terminating past its grace period, deletionTimestamp=%v", p.DeletionTimestamp)
	}

	// The watcher taints a, no sooner than taintAfter after Ready went Unknown.
	var tainted *corev1.Node
	taintSeen := poll(t, c, a+" tainted out-of-service", time.Duration(taintAfter+20)*time.Second, func() bool {
		n := getNode(t, c, a)
		if hasOurTaint(n) {
			tainted = n
			return true
		}
		return false
	})
	earliest := lttA.Add(taintAfter * time.Second)
	if taintSeen.Before(earliest) {
		t.Errorf("%s tainted at %s, before Unknown (%s) + %ds", a, taintSeen.UTC().Format(time.RFC3339Nano), lttA.UTC().Format(time.RFC3339), taintAfter)
	}
	anno, ok := tainted.Annotations[ourAnno]
	if !ok {
		t.Errorf("%s tainted without the annotation %s", a, ourAnno)
	} else if at, err := time.Parse(time.RFC3339, anno); err != nil {
		t.Errorf("annotation %s=%q is not RFC3339: %v", ourAnno, anno, err)
	} else {
		if at.Before(earliest) {
			t.Errorf("annotation says tainted at %s, before Unknown (%s) + %ds", anno, lttA.UTC().Format(time.RFC3339), taintAfter)
		}
		if !strings.HasSuffix(anno, "Z") {
			t.Errorf("annotation %q is not UTC", anno)
		}
	}
	if !hasTaint(tainted, foo.Key, foo.Value, foo.Effect) {
		t.Errorf("tainting %s dropped its taint %s=%s:%s", a, foo.Key, foo.Value, foo.Effect)
	}
	if _, err := c.cs.CoreV1().Pods("e2e").Get(ctx, "stuck", metav1.GetOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	measure(t, "scenario 1: %s tainted out-of-service %s after Ready=Unknown (threshold %ds, poll %ds)", a, fmtSeconds(taintSeen.Sub(lttA)), taintAfter, pollEvery)
	w.waitLog(t, 0, "Tainted "+a+" node.kubernetes.io/out-of-service=nodeshutdown:NoExecute: not reporting for", 5*time.Second)

	// The real pod garbage collector force-deletes the Terminating pod.
	podGone := poll(t, c, "pod e2e/stuck force-deleted by the pod garbage collector", 60*time.Second, func() bool {
		_, err := c.cs.CoreV1().Pods("e2e").Get(ctx, "stuck", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	measure(t, "scenario 1: Terminating pod removed %s after %s went Unknown (%s after the taint; pod GC checks every 20s)",
		fmtSeconds(podGone.Sub(lttA)), a, fmtSeconds(podGone.Sub(taintSeen)))

	// Every change is one JSON patch that first tests the resourceVersion.
	patches := 0
	for _, ev := range auditEvents(t, c, saUser(saNamespace, saName), started) {
		if ev.Verb != "patch" || ev.ObjectRef == nil || ev.ObjectRef.Name != a {
			continue
		}
		patches++
		var ops []map[string]any
		if err := json.Unmarshal(ev.RequestObject, &ops); err != nil || len(ops) == 0 {
			t.Errorf("audit: patch of %s is not a JSON patch array: %.200s", a, ev.RequestObject)
			continue
		}
		if ops[0]["op"] != "test" || ops[0]["path"] != "/metadata/resourceVersion" {
			t.Errorf("audit: patch of %s does not start with a test of /metadata/resourceVersion: %.300s", a, ev.RequestObject)
		}
	}
	if patches == 0 {
		t.Errorf("audit: no patch of %s by the ServiceAccount recorded", a)
	}

	t.Run("2_node_returns", func(t *testing.T) {
		uid := tainted.UID
		k.resume(a)
		readyAt := waitReady(t, c, a)
		cleared := poll(t, c, a+" taint and annotation removed", 20*time.Second, func() bool {
			n := getNode(t, c, a)
			_, annotated := n.Annotations[ourAnno]
			return !hasOurTaint(n) && !annotated
		})
		n := getNode(t, c, a)
		if n.UID != uid {
			t.Errorf("%s uid changed from %s to %s: the Node was recreated", a, uid, n.UID)
		}
		if !hasTaint(n, foo.Key, foo.Value, foo.Effect) {
			t.Errorf("clearing %s removed the other taint %s=%s:%s; taints now %v", a, foo.Key, foo.Value, foo.Effect, n.Spec.Taints)
		}
		if len(oosTaints(n)) != 0 {
			t.Errorf("%s still has an out-of-service taint: %v", a, n.Spec.Taints)
		}
		w.waitLog(t, 0, "Cleared "+a+": Ready again; out-of-service taint and annotation removed", 5*time.Second)
		measure(t, "scenario 2: taint and annotation removed %s after %s was Ready again; uid unchanged, %s kept",
			fmtSeconds(cleared.Sub(readyAt)), a, foo.Key)
	})

	t.Run("3_left_alone", func(t *testing.T) {
		// The operator's node has been Unknown past the threshold: still exactly the
		// operator's taint, and no annotation of ours.
		lttO := waitUnknown(t, c, o)
		lttS := waitUnknown(t, c, self)
		lttR := waitUnknown(t, c, r)
		sleepUntil(latest(lttO, lttS, lttR).Add(time.Duration(taintAfter+3*pollEvery) * time.Second))
		poll(t, c, r+" (removable, pruning off) tainted", 10*time.Second, func() bool { return hasOurTaint(getNode(t, c, r)) })
		k.resume(o)
		waitReady(t, c, o)
		time.Sleep(time.Duration(3*pollEvery)*time.Second + 500*time.Millisecond)
		n := getNode(t, c, o)
		if got := oosTaints(n); len(got) != 1 || got[0] != operatorOOS {
			t.Errorf("operator's node %s: out-of-service taints %v, want exactly the operator's %v", o, got, operatorOOS)
		}
		if _, ok := n.Annotations[ourAnno]; ok {
			t.Errorf("operator's node %s got our annotation", o)
		}
		rec.check(t, o, func(n *corev1.Node) string {
			if _, ok := n.Annotations[ourAnno]; ok {
				return "annotated by the watcher although the out-of-service taint was the operator's"
			}
			if got := oosTaints(n); len(got) != 1 {
				return fmt.Sprintf("has %d out-of-service taints, want the operator's 1", len(got))
			}
			return ""
		})
		for _, name := range []string{b, cc, self} {
			rec.check(t, name, func(n *corev1.Node) string {
				if _, ok := n.Annotations[ourAnno]; ok {
					return "annotated by the watcher"
				}
				if len(oosTaints(n)) != 0 {
					return "tainted out-of-service"
				}
				return ""
			})
		}
		for _, name := range []string{b, cc} {
			rec.check(t, name, func(n *corev1.Node) string {
				if r := readyOf(n); r != nil && r.Status != corev1.ConditionTrue {
					return "a healthy node was not Ready (heartbeat too slow?): " + string(r.Status)
				}
				return ""
			})
		}
		// Taint and annotation always arrive and leave together (one patch).
		for _, name := range []string{a, r} {
			rec.check(t, name, func(n *corev1.Node) string {
				_, annotated := n.Annotations[ourAnno]
				if annotated != hasOurTaint(n) {
					return fmt.Sprintf("taint present=%v but annotation present=%v: not one change", hasOurTaint(n), annotated)
				}
				return ""
			})
		}
		if !nodeExists(t, c, r) {
			t.Errorf("%s was deleted with pruning off", r)
		}
		// Scenario 5: with pruning off the watcher never tries to delete.
		for _, ev := range auditEvents(t, c, saUser(saNamespace, saName), started) {
			if ev.Verb == "delete" || ev.Verb == "deletecollection" {
				t.Errorf("audit: the watcher sent %s %s with pruning off", ev.Verb, ev.RequestURI)
			}
		}
		log := w.log()
		if first, _, _ := strings.Cut(log, "\n"); !strings.Contains(first, "starting") {
			t.Errorf("first log line %q does not contain \"starting\"", first)
		}
		if strings.Contains(log, token) {
			t.Errorf("the watcher logged its token")
		}
		for _, name := range []string{b, cc, self, o} {
			if strings.Contains(log, "Tainted "+name+" ") {
				t.Errorf("log says %s was tainted", name)
			}
		}
		w.stop(t)
		measure(t, "scenario 3: healthy nodes, own node %s and operator-tainted %s untouched over %s", self, o, fmtSeconds(time.Since(started)))
	})
}

func latest(ts ...time.Time) time.Time {
	var m time.Time
	for _, t := range ts {
		if t.After(m) {
			m = t
		}
	}
	return m
}

// missingPermissions: scenario 5, a ServiceAccount without patch (and one with nothing)
// makes `once` stop at its permission check, before any pass: one line naming the user, the
// verb and the deploy/ file that grants it, and exit 2.
func missingPermissions(t *testing.T, c *cluster, goodToken string) {
	ctx := context.Background()
	for _, sa := range []string{"noderecover-readonly", "noderecover-nothing"} {
		if _, err := c.cs.CoreV1().ServiceAccounts(saNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "e2e-nodes-read"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list"}}}}
	if _, err := c.cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "e2e-nodes-read"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "e2e-nodes-read"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "noderecover-readonly", Namespace: saNamespace}}}
	if _, err := c.cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if canI(t, c, saNamespace, "noderecover-readonly", "patch", "nodes") {
		t.Fatal("noderecover-readonly can patch nodes")
	}
	readonly, _ := saToken(t, c, saNamespace, "noderecover-readonly")
	nothing, _ := saToken(t, c, saNamespace, "noderecover-nothing")

	k := newKubelets(c.cs)
	defer k.removeAll(ctx)
	const x = "s5-x"
	for _, s := range []nodeSpec{{name: x}, {name: "s5-ok", alive: true}} {
		if _, err := k.add(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	ltt := waitUnknown(t, c, x)
	sleepUntil(ltt.Add(time.Duration(taintAfter+1) * time.Second))
	common := []string{"--taint-after", strconv.Itoa(taintAfter), "--self-node", "e2e-runner"}

	// The permission check at start asks the real authorizer (SelfSubjectAccessReview) and the
	// real authenticator (SelfSubjectReview) and stops before the first pass: exit 2, one line
	// naming the user, the verb, the resource and the deploy/ file that grants it.
	denied := func(sa, verb string, args []string) {
		t.Helper()
		out, code := runOnce(t, args...)
		if code != 2 {
			t.Errorf("once as %s: exit %d, want 2:\n%s", sa, code, out)
		}
		want := []string{"system:serviceaccount:" + saNamespace + ":" + sa, "may not " + verb + " nodes", "deploy/noderecover.yaml"}
		var lines []string
		for _, ln := range strings.Split(out, "\n") {
			if strings.Contains(ln, "Permission check") {
				lines = append(lines, ln)
			}
		}
		if len(lines) != 1 {
			t.Errorf("once as %s: want one permission check line, got %d:\n%s", sa, len(lines), out)
		}
		for _, w := range want {
			if len(lines) == 1 && !strings.Contains(lines[0], w) {
				t.Errorf("once as %s: the line does not name %q:\n%s", sa, w, out)
			}
		}
		if strings.Contains(out, "Tainting") || strings.Contains(out, "failed") {
			t.Errorf("once as %s: it went on to a pass:\n%s", sa, out)
		}
	}
	denied("noderecover-readonly", "patch", append(connArgs(c, readonly), common...))
	if hasOurTaint(getNode(t, c, x)) {
		t.Fatalf("%s tainted by a ServiceAccount without patch", x)
	}
	denied("noderecover-nothing", "list", append(connArgs(c, nothing), common...))

	// The same pass with the deploy/ ServiceAccount succeeds, so the failures above were
	// the permissions.
	out, code := runOnce(t, append(connArgs(c, goodToken), common...)...)
	if code != 0 {
		t.Errorf("once with the noderecover ServiceAccount: exit %d, want 0:\n%s", code, out)
	}
	if !hasOurTaint(getNode(t, c, x)) {
		t.Errorf("once with the noderecover ServiceAccount did not taint %s", x)
	}
	measure(t, "scenario 5: SAR get/list/patch yes, delete only with the pruning output of manifests; no-patch SA: once exit 2 naming patch; no-list SA: once exit 2 naming list")
}

// scenarioPrune: scenario 4.
func scenarioPrune(t *testing.T, c *cluster, tokenFile, token string) {
	ctx := context.Background()
	k := newKubelets(c.cs)
	defer k.removeAll(ctx)
	rec := recordNodes(t, c)
	const (
		p    = "s4-agent"
		p2   = "s4-agent2"
		cp   = "s4-server"
		em   = "s4-etcd-gone"
		u    = "s4-unlabelled"
		fl   = "s4-label-false"
		self = "s4-self"
	)
	removable := map[string]string{pruneLabel: "true"}
	for _, s := range []nodeSpec{
		{name: p, labels: removable},
		{name: cp, labels: map[string]string{pruneLabel: "true", cpLabel: "true"}},
		{name: u},
		{name: fl, labels: map[string]string{pruneLabel: "false"}},
		{name: self, labels: removable},
	} {
		if _, err := k.add(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	started := time.Now()
	// Every node here but the etcd members is silent on purpose: the storm guard is off.
	w := startWatcher(t, c, "s4", runArgs(c, tokenFile,
		"--self-node", self, "--taint-after", strconv.Itoa(taintAfter), "--prune-after", strconv.Itoa(pruneAfter),
		"--poll", strconv.Itoa(pollEvery), "--max-unknown", "100%")...)
	defer func() {
		if !w.stopped {
			w.stop(t)
		}
	}()

	// No etcd node at all: kept, the pass says why, the node is tainted instead.
	lttP := waitUnknown(t, c, p)
	w.waitLog(t, 0, "Not deleting "+p+": only 0 Ready etcd members would remain", time.Duration(pruneAfter+20)*time.Second)
	if time.Now().Before(lttP.Add(pruneAfter * time.Second)) {
		t.Errorf("quorum refusal for %s logged before its prune threshold", p)
	}
	if !nodeExists(t, c, p) {
		t.Fatalf("%s deleted with no etcd node", p)
	}
	poll(t, c, p+" tainted while kept", 10*time.Second, func() bool { return hasOurTaint(getNode(t, c, p)) })

	// Two Ready etcd nodes: still kept.
	for _, e := range []string{"s4-etcd-1", "s4-etcd-2"} {
		if _, err := k.add(ctx, nodeSpec{name: e, alive: true, labels: map[string]string{etcdLabel: "true"}}); err != nil {
			t.Fatal(err)
		}
		waitReady(t, c, e)
	}
	off := len(w.log())
	w.waitLog(t, off, "Not deleting "+p+": only 2 Ready etcd members would remain", 15*time.Second)
	if !nodeExists(t, c, p) {
		t.Fatalf("%s deleted with 2 etcd nodes", p)
	}

	// A third: the agent goes; a fresh agent goes no sooner than its prune threshold; the
	// control-plane and etcd nodes are refused; the unlabelled ones stay.
	off = len(w.log())
	if _, err := k.add(ctx, nodeSpec{name: "s4-etcd-3", alive: true, labels: map[string]string{etcdLabel: "true"}}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []nodeSpec{{name: p2, labels: removable}, {name: em, labels: map[string]string{pruneLabel: "true", etcdLabel: "true"}}} {
		if _, err := k.add(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	uids := map[string]string{}
	for _, n := range []string{p, p2} {
		uids[n] = string(getNode(t, c, n).UID)
	}
	pGone := poll(t, c, p+" deleted with 3 Ready etcd nodes", 20*time.Second, func() bool { return !nodeExists(t, c, p) })
	w.waitLog(t, off, "Deleted "+p+": not reporting for", 5*time.Second)
	measure(t, "scenario 4: %s deleted %s after Ready=Unknown, once the third etcd node was Ready", p, fmtSeconds(pGone.Sub(lttP)))

	lttP2 := waitUnknown(t, c, p2)
	p2Gone := poll(t, c, p2+" deleted", time.Duration(pruneAfter+30)*time.Second, func() bool { return !nodeExists(t, c, p2) })
	if p2Gone.Before(lttP2.Add(pruneAfter * time.Second)) {
		t.Errorf("%s deleted %s after Unknown, before the prune threshold %ds", p2, fmtSeconds(p2Gone.Sub(lttP2)), pruneAfter)
	}
	measure(t, "scenario 4: %s deleted %s after Ready=Unknown (prune threshold %ds, poll %ds)", p2, fmtSeconds(p2Gone.Sub(lttP2)), pruneAfter, pollEvery)

	lttEm := waitUnknown(t, c, em)
	sleepUntil(lttEm.Add(time.Duration(pruneAfter+2*pollEvery) * time.Second))
	// From the start: a watcher may say a refusal once rather than every pass.
	w.waitLog(t, 0, "Not deleting "+cp+": it is a control-plane node", 10*time.Second)
	w.waitLog(t, off, "Not deleting "+em+": it is an etcd member", 10*time.Second)
	for _, n := range []string{cp, em, u, fl, self} {
		if !nodeExists(t, c, n) {
			t.Errorf("%s was deleted", n)
		}
	}
	for _, n := range []string{cp, em, u, fl} {
		if !hasOurTaint(getNode(t, c, n)) {
			t.Errorf("%s, past the prune threshold and not deleted, is not tainted", n)
		}
	}
	for _, name := range []string{"s4-etcd-1", "s4-etcd-2", "s4-etcd-3", self} {
		rec.check(t, name, func(n *corev1.Node) string {
			if len(oosTaints(n)) != 0 {
				return "tainted out-of-service"
			}
			return ""
		})
	}
	// The deletes carried uid and resourceVersion preconditions; no other node was asked for.
	deleted := map[string]bool{}
	for _, ev := range auditEvents(t, c, saUser(saNamespace, saName), started) {
		if ev.Verb != "delete" || ev.ObjectRef == nil {
			continue
		}
		name := ev.ObjectRef.Name
		if name != p && name != p2 {
			t.Errorf("audit: the watcher sent DELETE for %s", name)
			continue
		}
		var opts metav1.DeleteOptions
		if err := json.Unmarshal(ev.RequestObject, &opts); err != nil || opts.Preconditions == nil ||
			opts.Preconditions.UID == nil || opts.Preconditions.ResourceVersion == nil {
			t.Errorf("audit: DELETE %s without uid and resourceVersion preconditions: %.300s", name, ev.RequestObject)
			continue
		}
		if string(*opts.Preconditions.UID) != uids[name] {
			t.Errorf("audit: DELETE %s precondition uid %s, node's uid %s", name, *opts.Preconditions.UID, uids[name])
		}
		if ev.ResponseStatus != nil && ev.ResponseStatus.Code == 200 {
			deleted[name] = true
		}
	}
	if !deleted[p] || !deleted[p2] {
		t.Errorf("audit: successful DELETEs by the ServiceAccount: %v, want %s and %s", deleted, p, p2)
	}
	if strings.Contains(w.log(), token) {
		t.Errorf("the watcher logged its token")
	}
	w.stop(t)
}

// scenarioPaging: scenario 6, 60 nodes read 7 at a time.
func scenarioPaging(t *testing.T, c *cluster, tokenFile string) {
	ctx := context.Background()
	k := newKubelets(c.cs)
	defer k.removeAll(ctx)
	const total, pageSize = 60, 7
	name := func(i int) string { return fmt.Sprintf("s6-%02d", i) }
	etcd := map[int]bool{3: true, 31: true, 57: true} // pages 1, 5 and 9 of 9
	const removable, self = 22, 44                    // page 4: no etcd node on it
	silent := map[int]bool{}
	for i := 0; i < total; i += 5 {
		silent[i] = true // 12 nodes on every page but one
	}
	for i := 0; i < total; i++ {
		s := nodeSpec{name: name(i), alive: !silent[i] && i != removable && i != self}
		switch {
		case etcd[i]:
			s.labels = map[string]string{etcdLabel: "true"}
		case i == removable:
			s.labels = map[string]string{pruneLabel: "true"}
		}
		if _, err := k.add(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	onlyNodes(t, c, total)
	started := time.Now()
	w := startWatcher(t, c, "s6", append(runArgs(c, tokenFile,
		"--self-node", name(self), "--taint-after", strconv.Itoa(taintAfter), "--prune-after", strconv.Itoa(pruneAfter),
		"--poll", strconv.Itoa(pollEvery), "--page-size", strconv.Itoa(pageSize)), pollingOnly(t)...)...)
	defer func() {
		if !w.stopped {
			w.stop(t)
		}
	}()

	var last time.Time
	for i := range silent {
		if l := waitUnknown(t, c, name(i)); l.After(last) {
			last = l
		}
	}
	allTainted := poll(t, c, "every silent node tainted", time.Duration(taintAfter+20)*time.Second, func() bool {
		for i := range silent {
			if !hasOurTaint(getNode(t, c, name(i))) {
				return false
			}
		}
		return true
	})
	measure(t, "scenario 6: all %d silent nodes on 8 of 9 pages tainted %s after the last went Unknown (page size %d, %d nodes)",
		len(silent), fmtSeconds(allTainted.Sub(last)), pageSize, total)
	gone := poll(t, c, name(removable)+" deleted (3 Ready etcd nodes on other pages)", time.Duration(pruneAfter+30)*time.Second, func() bool {
		return !nodeExists(t, c, name(removable))
	})
	measure(t, "scenario 6: %s deleted %s after the watcher started, quorum counted over pages 1, 5 and 9", name(removable), fmtSeconds(gone.Sub(started)))
	time.Sleep(time.Duration(2*pollEvery) * time.Second)
	for i := 0; i < total; i++ {
		if silent[i] || i == removable {
			continue
		}
		n := getNode(t, c, name(i))
		if len(oosTaints(n)) != 0 {
			t.Errorf("%s (healthy or the watcher's own node) tainted", n.Name)
		}
	}
	// Each pass read all 9 pages: the first without, the others with a continue token.
	firsts, continued := 0, 0
	for _, ev := range auditEvents(t, c, saUser(saNamespace, saName), started) {
		if ev.Verb != "list" {
			continue
		}
		// A node whose change was refused because it changed since it was listed (the node
		// lifecycle controller writes these nodes too) is read again alone: not a page.
		if strings.Contains(ev.RequestURI, "fieldSelector=metadata.name") {
			continue
		}
		if !strings.Contains(ev.RequestURI, "limit="+strconv.Itoa(pageSize)) {
			t.Errorf("audit: node list without limit=%d: %s", pageSize, ev.RequestURI)
			continue
		}
		if strings.Contains(ev.RequestURI, "continue=") {
			continued++
		} else {
			firsts++
		}
	}
	pages := (total + pageSize - 1) / pageSize
	if firsts == 0 || continued < (pages-1)*firsts-(pages-1) {
		t.Errorf("audit: %d first pages and %d continued pages; want about %d continued per pass", firsts, continued, pages-1)
	}
	measure(t, "scenario 6: %d passes read %d continued pages (%.1f per pass, %d expected)", firsts, continued, float64(continued)/float64(max(firsts, 1)), pages-1)
	w.stop(t)
}
