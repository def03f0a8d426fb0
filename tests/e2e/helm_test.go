package e2e

// The Helm chart on the real control plane (issue 24): two releases in two namespaces side by
// side, installed, tested, upgraded and uninstalled with the helm CLI, each release's
// ServiceAccount running `noderecover once` with what the release grants, and nothing of either
// left after its uninstall. The control plane runs no kubelet: for `helm test`, the test plays
// the kubelet of its hook's pod (runs the pod's command with its ServiceAccount's token, then
// sets the pod's phase from the exit status). Needs NODERECOVER_HELM (tests/helm/run.sh sets it
// and runs this test); skipped without.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const chartDir = "../../deploy/helm/noderecover"

type helmCLI struct {
	bin, kubeconfig, home string
}

func (h helmCLI) run(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.bin, append(args, "--kubeconfig", h.kubeconfig)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + h.home, "HELM_CACHE_HOME=" + h.home, "HELM_CONFIG_HOME=" + h.home,
		"HELM_DATA_HOME=" + h.home}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// inventory names every object of the kinds the chart makes, and the releases' records
// (Helm's Secrets), cluster-wide: KIND NAMESPACE/NAME.
func inventory(t *testing.T, c *cluster) map[string]bool {
	t.Helper()
	ctx := context.Background()
	o := metav1.ListOptions{}
	out := map[string]bool{}
	add := func(kind, ns, name string) { out[kind+" "+ns+"/"+name] = true }
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	nss, err := c.cs.CoreV1().Namespaces().List(ctx, o)
	must(err)
	for _, x := range nss.Items {
		add("Namespace", "", x.Name)
	}
	sas, err := c.cs.CoreV1().ServiceAccounts("").List(ctx, o)
	must(err)
	for _, x := range sas.Items {
		add("ServiceAccount", x.Namespace, x.Name)
	}
	secrets, err := c.cs.CoreV1().Secrets("").List(ctx, o)
	must(err)
	for _, x := range secrets.Items {
		add("Secret", x.Namespace, x.Name)
	}
	svcs, err := c.cs.CoreV1().Services("").List(ctx, o)
	must(err)
	for _, x := range svcs.Items {
		add("Service", x.Namespace, x.Name)
	}
	pods, err := c.cs.CoreV1().Pods("").List(ctx, o)
	must(err)
	for _, x := range pods.Items {
		add("Pod", x.Namespace, x.Name)
	}
	ds, err := c.cs.AppsV1().Deployments("").List(ctx, o)
	must(err)
	for _, x := range ds.Items {
		add("Deployment", x.Namespace, x.Name)
	}
	crs, err := c.cs.RbacV1().ClusterRoles().List(ctx, o)
	must(err)
	for _, x := range crs.Items {
		add("ClusterRole", "", x.Name)
	}
	crbs, err := c.cs.RbacV1().ClusterRoleBindings().List(ctx, o)
	must(err)
	for _, x := range crbs.Items {
		add("ClusterRoleBinding", "", x.Name)
	}
	rs, err := c.cs.RbacV1().Roles("").List(ctx, o)
	must(err)
	for _, x := range rs.Items {
		add("Role", x.Namespace, x.Name)
	}
	rbs, err := c.cs.RbacV1().RoleBindings("").List(ctx, o)
	must(err)
	for _, x := range rbs.Items {
		add("RoleBinding", x.Namespace, x.Name)
	}
	return out
}

// testKubelet plays the kubelet of `helm test`'s pods in ns until stop is closed: the pod's
// container runs as the binary under test with the pod's args, its ServiceAccount's token and
// the control plane's address (what the pod's mounted token and KUBERNETES_SERVICE_* give it),
// and the pod's phase becomes Succeeded or Failed by its exit status. ran gets one line a pod.
func testKubelet(t *testing.T, c *cluster, ns string, stop chan struct{}, ran chan<- string) {
	ctx := context.Background()
	done := map[string]bool{}
	for {
		select {
		case <-stop:
			return
		case <-time.After(200 * time.Millisecond):
		}
		pods, err := c.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=test"})
		if err != nil {
			continue
		}
		for i := range pods.Items {
			pod := &pods.Items[i]
			if done[string(pod.UID)] || pod.Status.Phase != corev1.PodPending || pod.DeletionTimestamp != nil {
				continue
			}
			done[string(pod.UID)] = true
			tok, _ := saToken(t, c, ns, pod.Spec.ServiceAccountName)
			ctr := pod.Spec.Containers[0]
			args := append(append([]string{}, ctr.Args...), connArgs(c, tok)...)
			cmd := exec.Command(noderecoverBin(t), args...)
			cmd.Env = append(cleanEnv(), "NODE_RECOVERY_SELF_NODE=e2e-test-pod-node")
			out, err := cmd.CombinedOutput()
			pod.Status.Phase = corev1.PodSucceeded
			if err != nil {
				pod.Status.Phase = corev1.PodFailed
			}
			if _, err := c.cs.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
				t.Errorf("pod %s/%s: setting its phase: %v", ns, pod.Name, err)
			}
			ran <- ns + "/" + pod.Name + " as " + pod.Spec.ServiceAccountName + ": " + strings.Join(ctr.Args, " ") + ": " +
				string(pod.Status.Phase) + "\n" + string(out)
		}
	}
}

func difference(a, b map[string]bool) []string {
	var out []string
	for k := range a {
		if !b[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func TestHelm(t *testing.T) {
	bin := os.Getenv("NODERECOVER_HELM")
	if bin == "" {
		t.Skip("NODERECOVER_HELM is not set (tests/helm/run.sh runs this test with it)")
	}
	c := getCluster(t)
	noderecoverBin(t)
	home := filepath.Join(c.dir, "helm-home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(c.dir, "helm.kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
  - name: e2e
    cluster: {server: "`+c.server+`", certificate-authority: "`+c.caFile+`"}
users:
  - name: admin
    user: {token: "`+c.adminToken+`"}
contexts:
  - name: e2e
    context: {cluster: e2e, user: admin}
current-context: e2e
`), 0o600); err != nil {
		t.Fatal(err)
	}
	h := helmCLI{bin, kubeconfig, home}
	before := inventory(t, c)
	started := time.Now()

	// Release A as the README installs it; release B elsewhere, pruning on, a metrics Service.
	out := h.run(t, "install", "helm-a", chartDir, "--namespace", "helm-a", "--create-namespace", "--set", "taintAfter=300")
	if !strings.Contains(out, "is installed as helm-a-noderecover in namespace helm-a") {
		t.Errorf("helm install: NOTES.txt not shown:\n%s", out)
	}
	h.run(t, "install", "nr-b", chartDir, "--namespace", "helm-b", "--create-namespace",
		"--set", "taintAfter=5m,pruneAfter=1800,metrics.service.enabled=true")
	installed := time.Now()
	got := inventory(t, c)
	added := difference(got, before)
	want := []string{
		"ClusterRole /helm-a-noderecover", "ClusterRole /nr-b-noderecover",
		"ClusterRoleBinding /helm-a-noderecover", "ClusterRoleBinding /nr-b-noderecover",
		"Deployment helm-a/helm-a-noderecover", "Deployment helm-b/nr-b-noderecover",
		"Namespace /helm-a", "Namespace /helm-b",
		"Role default/helm-a-noderecover-events", "Role default/nr-b-noderecover-events",
		"Role helm-a/helm-a-noderecover", "Role helm-b/nr-b-noderecover",
		"RoleBinding default/helm-a-noderecover-events", "RoleBinding default/nr-b-noderecover-events",
		"RoleBinding helm-a/helm-a-noderecover", "RoleBinding helm-b/nr-b-noderecover",
		"Secret helm-a/sh.helm.release.v1.helm-a.v1", "Secret helm-b/sh.helm.release.v1.nr-b.v1",
		"Service helm-b/nr-b-noderecover",
		"ServiceAccount helm-a/helm-a-noderecover", "ServiceAccount helm-b/nr-b-noderecover",
	}
	sort.Strings(want)
	if strings.Join(added, "\n") != strings.Join(want, "\n") {
		t.Errorf("after both installs, the objects added are\n  %s\nwant\n  %s", strings.Join(added, "\n  "), strings.Join(want, "\n  "))
	}

	// What each release grants, asked of the real authorizer and used by the binary: `once`
	// with the release's ServiceAccount passes its permission check (exit 2 if a grant is
	// missing) and its pass.
	grants := func(what, ns, sa string, deletes bool) {
		t.Helper()
		for verb, want := range map[string]bool{"list": true, "watch": true, "patch": true, "delete": deletes} {
			if got := canI(t, c, ns, sa, verb, "nodes"); got != want {
				t.Errorf("%s: %s/%s may %s nodes: %v, want %v", what, ns, sa, verb, got, want)
			}
		}
		if canI(t, c, ns, sa, "list", "secrets") {
			t.Errorf("%s: %s/%s may list secrets", what, ns, sa)
		}
		tok, _ := saToken(t, c, ns, sa)
		args := append(connArgs(c, tok), "--taint-after", "300")
		if deletes {
			args = append(args, "--prune-after", "1800")
		}
		if out, code := runOnce(t, args...); code != 0 {
			t.Errorf("%s: once as %s/%s: exit %d\n%s", what, ns, sa, code, out)
		}
	}
	grants("installed", "helm-a", "helm-a-noderecover", false)
	grants("installed", "helm-b", "nr-b-noderecover", true)

	// helm test: the hook's pod (noderecover plan as the release's ServiceAccount) passes
	for _, r := range [][2]string{{"helm-a", "helm-a"}, {"nr-b", "helm-b"}} {
		stop, ran := make(chan struct{}), make(chan string, 4)
		go testKubelet(t, c, r[1], stop, ran)
		out := h.run(t, "test", r[0], "--namespace", r[1], "--timeout", "60s")
		close(stop)
		if !strings.Contains(out, "Phase:          Succeeded") {
			t.Errorf("helm test %s: not passed:\n%s", r[0], out)
		}
		select {
		case line := <-ran:
			t.Logf("helm test %s: ran %s", r[0], line)
			if !strings.Contains(line, ": plan --taint-after 300") || !strings.Contains(line, ": Succeeded\n") {
				t.Errorf("helm test %s: the hook ran %s", r[0], line)
			}
		default:
			t.Errorf("helm test %s: no test pod was run", r[0])
		}
	}
	// the two releases elect apart: each its own Lease, in its own namespace
	for ns, name := range map[string]string{"helm-a": "helm-a-noderecover", "helm-b": "nr-b-noderecover"} {
		d, err := c.cs.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		lease := ""
		for _, e := range d.Spec.Template.Spec.Containers[0].Env {
			if e.Name == "NODE_RECOVERY_LEASE_NAME" {
				lease = e.Value
			}
		}
		if lease != name || d.Spec.Template.Spec.ServiceAccountName != name {
			t.Errorf("Deployment %s/%s: Lease %q, ServiceAccount %q, want both %s", ns, name, lease,
				d.Spec.Template.Spec.ServiceAccountName, name)
		}
	}

	// Upgrades: A turns pruning on (delete granted, the pod pinned), B changes a setting and
	// drops its Service.
	h.run(t, "upgrade", "helm-a", chartDir, "--namespace", "helm-a", "--reuse-values", "--set", "pruneAfter=1800")
	h.run(t, "upgrade", "nr-b", chartDir, "--namespace", "helm-b", "--reuse-values", "--set", "poll=30,metrics.service.enabled=false")
	grants("upgraded", "helm-a", "helm-a-noderecover", true)
	grants("upgraded", "helm-b", "nr-b-noderecover", true)
	d, err := c.cs.AppsV1().Deployments("helm-a").Get(context.Background(), "helm-a-noderecover", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a := d.Spec.Template.Spec.Affinity; a == nil || a.NodeAffinity == nil {
		t.Errorf("helm-a upgraded to pruning: the pod is not pinned to control-plane nodes: %+v", a)
	}
	if _, err := c.cs.CoreV1().Services("helm-b").Get(context.Background(), "nr-b-noderecover", metav1.GetOptions{}); err == nil {
		t.Errorf("nr-b upgraded with metrics.service.enabled=false: its Service is still there")
	}
	upgraded := time.Now()

	// Uninstalls, one at a time: each takes its own objects and nothing of the other's.
	h.run(t, "uninstall", "helm-a", "--namespace", "helm-a", "--wait", "--timeout", "60s")
	left := difference(inventory(t, c), before)
	var bs []string
	for _, k := range left {
		switch {
		case k == "Namespace /helm-a": // Helm's --create-namespace made it, not the release
		case strings.Contains(k, "helm-a"):
			t.Errorf("helm-a uninstalled: %s is left", k)
		default:
			bs = append(bs, k)
		}
	}
	// B's own, untouched: its objects but the Service, and its two release records
	var wantB []string
	for _, k := range want {
		if !strings.Contains(k, "helm-a") && !strings.HasPrefix(k, "Service ") && !strings.HasPrefix(k, "Secret ") {
			wantB = append(wantB, k)
		}
	}
	wantB = append(wantB, "Secret helm-b/sh.helm.release.v1.nr-b.v1", "Secret helm-b/sh.helm.release.v1.nr-b.v2")
	sort.Strings(wantB)
	if strings.Join(bs, "\n") != strings.Join(wantB, "\n") {
		t.Errorf("after helm-a's uninstall, nr-b's objects are\n  %s\nwant\n  %s", strings.Join(bs, "\n  "), strings.Join(wantB, "\n  "))
	}
	h.run(t, "uninstall", "nr-b", "--namespace", "helm-b", "--wait", "--timeout", "60s")
	left = difference(inventory(t, c), before)
	if strings.Join(left, " ") != "Namespace /helm-a Namespace /helm-b" {
		t.Errorf("after both uninstalls, left beyond the namespaces --create-namespace made:\n  %s", strings.Join(left, "\n  "))
	}
	if gone := difference(before, inventory(t, c)); len(gone) != 0 {
		t.Errorf("objects that were there before the installs are gone: %v", gone)
	}
	measure(t, "helm: two releases installed in %s, checked and upgraded in %s, uninstalled in %s",
		fmtSeconds(installed.Sub(started)), fmtSeconds(upgraded.Sub(installed)), fmtSeconds(time.Since(upgraded)))
}
