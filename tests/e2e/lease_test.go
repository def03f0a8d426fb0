package e2e

// Scenario 12, leader election on the real control plane: two replicas, each with its own
// ServiceAccount (so the audit log tells them apart), share a Lease. The first leads; the
// leader is stopped (SIGSTOP); the other takes over within 15-25 s and taints a node that went
// silent meanwhile; the old leader is resumed (SIGCONT) and, by the audit log, sends no write
// after the take-over. Owns no helper another scenario uses.

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const leaseName = "s13-lease"

// leaseReplica makes ServiceAccount name in the watcher's namespace, bound to the manifests'
// ClusterRole (nodes) and Role (leases), and returns its token file.
func leaseReplica(t *testing.T, c *cluster, name string) string {
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := c.cs.CoreV1().ServiceAccounts(saNamespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	subj := []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: saNamespace}}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, Subjects: subj,
		RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: saName}}
	if _, err := c.cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: saNamespace}, Subjects: subj,
		RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: saName}}
	if _, err := c.cs.RbacV1().RoleBindings(saNamespace).Create(ctx, rb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.cs.RbacV1().ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{})
		c.cs.RbacV1().RoleBindings(saNamespace).Delete(ctx, name, metav1.DeleteOptions{})
	})
	file, _ := saToken(t, c, saNamespace, name)
	return file
}

func leaseHolder(t *testing.T, c *cluster) (string, *coordinationv1.Lease) {
	l, err := c.cs.CoordinationV1().Leases(saNamespace).Get(context.Background(), leaseName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		t.Fatalf("reading lease: %v", err)
	}
	if l.Spec.HolderIdentity == nil {
		return "", l
	}
	return *l.Spec.HolderIdentity, l
}

func scenarioLease(t *testing.T, c *cluster) {
	ctx := context.Background()
	k := newKubelets(c.cs)
	defer k.removeAll(ctx)
	const silent = "s13-silent"
	for _, s := range []nodeSpec{{name: silent, alive: true}, {name: "s13-alive-1", alive: true}, {name: "s13-alive-2", alive: true}} {
		if _, err := k.add(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	onlyNodes(t, c, 3)
	waitReady(t, c, silent)
	args := func(tok string) []string {
		// Events off: each replica's ServiceAccount is granted nodes and leases only
		return runArgs(c, tok, "--self-node", "e2e-runner", "--taint-after", strconv.Itoa(taintAfter),
			"--poll", strconv.Itoa(pollEvery), "--events=false", "--leader-elect", "--lease-namespace", saNamespace, "--lease-name", leaseName)
	}
	tokA, tokB := leaseReplica(t, c, "s13-replica-a"), leaseReplica(t, c, "s13-replica-b")
	// POD_NAME names each replica; cleanEnv keeps the rest of the environment
	t.Setenv("POD_NAME", "s13-a")
	a := startWatcher(t, c, "s13-a", args(tokA)...)
	a.waitLog(t, 0, "Leading: ", 20*time.Second)
	t.Setenv("POD_NAME", "s13-b")
	b := startWatcher(t, c, "s13-b", args(tokB)...)
	defer func() {
		for _, w := range []*watcher{a, b} {
			if !w.stopped {
				w.cmd.Process.Signal(syscall.SIGCONT)
				w.stop(t)
			}
		}
	}()
	b.waitLog(t, 0, "Following: ", 20*time.Second)
	holderA, _ := leaseHolder(t, c)
	if !strings.HasPrefix(holderA, "s13-a-") {
		t.Fatalf("lease held by %q, want replica a", holderA)
	}

	// The leader stops; a node goes silent meanwhile.
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stoppedAt := time.Now()
	k.stop(silent)
	poll(t, c, "replica b holds the lease", 40*time.Second, func() bool {
		h, _ := leaseHolder(t, c)
		return strings.HasPrefix(h, "s13-b-")
	})
	// the take-over is b's first successful lease update after the stop, by the audit log
	var takeover time.Time
	for _, ev := range auditEvents(t, c, saUser(saNamespace, "s13-replica-b"), stoppedAt) {
		if ev.Verb == "update" && ev.ObjectRef != nil && ev.ObjectRef.Resource == "leases" &&
			ev.ResponseStatus != nil && ev.ResponseStatus.Code == 200 && takeover.IsZero() {
			takeover = ev.StageTimestamp
		}
	}
	if takeover.IsZero() {
		t.Fatalf("audit: no lease update by replica b after the stop")
	}
	took := takeover.Sub(stoppedAt)
	measure(t, "scenario 13: the other replica took the lease over %s after the leader was stopped (lease 15s, retry 2s)", fmtSeconds(took))
	if took < 14*time.Second || took > 25*time.Second {
		t.Errorf("take-over %s after SIGSTOP, want 15-25s", fmtSeconds(took))
	}
	_, l := leaseHolder(t, c)
	if l.Spec.LeaseTransitions == nil || *l.Spec.LeaseTransitions != 1 {
		t.Errorf("leaseTransitions %v after one take-over, want 1", l.Spec.LeaseTransitions)
	}
	// the new leader acts
	waitUnknown(t, c, silent)
	poll(t, c, silent+" tainted by the new leader", 30*time.Second, func() bool { return hasOurTaint(getNode(t, c, silent)) })

	// The old leader resumes: it must write nothing from the take-over on.
	off := len(a.log())
	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	a.waitLog(t, off, "Following: ", 20*time.Second)
	time.Sleep(5 * time.Second)
	// a first: once b releases the lease, a would rightly take it
	a.stop(t)
	b.stop(t)
	for _, ev := range auditEvents(t, c, saUser(saNamespace, "s13-replica-a"), takeover) {
		if ev.RequestReceivedTimestamp.Before(takeover) {
			continue
		}
		switch ev.Verb {
		case "get", "list", "watch":
		default:
			t.Errorf("audit: the old leader sent %s %s after the take-over (answered %+v)", ev.Verb, ev.RequestURI, ev.ResponseStatus)
		}
	}
	patched := false
	for _, ev := range auditEvents(t, c, saUser(saNamespace, "s13-replica-b"), stoppedAt) {
		patched = patched || (ev.Verb == "patch" && ev.ObjectRef != nil && ev.ObjectRef.Name == silent)
	}
	if !patched {
		t.Errorf("audit: no patch of %s by the new leader", silent)
	}
	// b released the lease on SIGTERM; a, following, had nothing to release
	if h, _ := leaseHolder(t, c); h != "" {
		t.Errorf("lease still held by %q after both replicas stopped", h)
	}
}
