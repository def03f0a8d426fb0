package e2e

// Server dry run on the real control plane: `noderecover once --dry-run=server` sends its taint
// and its delete with dryRun=All, so RBAC and admission run and nothing is stored: the Node is
// still there and untainted. The must-fail half shows why the delete's dryRun must be in its
// DeleteOptions body: kube-apiserver reads a DELETE's query parameters only when it has no body,
// so the same delete with dryRun in the query alone really deletes the (throwaway) node.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func scenarioServerDryRun(t *testing.T, c *cluster, tokenFile string) {
	ctx := context.Background()
	k := newKubelets(c.cs)
	defer k.removeAll(ctx)
	const (
		tn = "s8-taint"
		pn = "s8-prune"
	)
	specs := []nodeSpec{{name: tn}, {name: pn, labels: map[string]string{pruneLabel: "true"}}}
	for i := 0; i < 3; i++ {
		specs = append(specs, nodeSpec{name: fmt.Sprintf("s8-etcd-%d", i), alive: true, labels: map[string]string{etcdLabel: "true"}})
	}
	for _, s := range specs {
		if _, err := k.add(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	waitUnknown(t, c, tn)
	ltt := waitUnknown(t, c, pn)
	sleepUntil(ltt.Add(time.Duration(pruneAfter+1) * time.Second))
	before := time.Now()
	out, code := runOnce(t, append(connArgs(c, tokenFile), "--dry-run=server", "--taint-after", strconv.Itoa(taintAfter),
		"--prune-after", strconv.Itoa(pruneAfter), "--self-node", "e2e-runner")...)
	if code != 0 {
		t.Errorf("once --dry-run=server: exit %d, want 0:\n%s", code, out)
	}
	for _, want := range []string{"Would taint " + tn, "Would delete " + pn} {
		if !strings.Contains(out, want) {
			t.Errorf("once --dry-run=server did not log %q:\n%s", want, out)
		}
	}
	if !nodeExists(t, c, pn) {
		t.Fatalf("%s deleted by a server dry run", pn)
	}
	if n := getNode(t, c, tn); len(oosTaints(n)) != 0 {
		t.Errorf("%s tainted by a server dry run: %v", tn, n.Spec.Taints)
	}
	// The API server saw the writes, each with dryRun=All, and answered them (so RBAC and
	// admission ran): nothing was skipped on our side.
	seen := map[string]bool{}
	for _, ev := range auditEvents(t, c, saUser(saNamespace, saName), before) {
		if ev.Verb != "patch" && ev.Verb != "delete" {
			continue
		}
		if !strings.Contains(ev.RequestURI, "dryRun=All") {
			t.Errorf("%s %s without dryRun=All", ev.Verb, ev.RequestURI)
		}
		if ev.ResponseStatus == nil || ev.ResponseStatus.Code != 200 {
			t.Errorf("%s %s answered %+v, want 200", ev.Verb, ev.RequestURI, ev.ResponseStatus)
		}
		seen[ev.Verb] = true
	}
	if !seen["patch"] || !seen["delete"] {
		t.Errorf("audit log: dry-run patch seen %v, delete seen %v; want both", seen["patch"], seen["delete"])
	}
	measure(t, "scenario 8: server dry run: taint and delete sent with dryRun=All, answered 200, %s and %s unchanged", tn, pn)

	// Must-fail: dryRun in the query of a DELETE that carries DeleteOptions is ignored.
	throwaway := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "s8-throwaway"}}
	n, err := c.cs.CoreV1().Nodes().Create(ctx, throwaway, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.cs.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{})
	// Only the uid as precondition: the node lifecycle controller changes a new node at once.
	body := fmt.Sprintf(`{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"uid":%q}}`, string(n.UID))
	res := c.cs.CoreV1().RESTClient().Delete().AbsPath("/api/v1/nodes", n.Name).Param("dryRun", "All").
		SetHeader("Content-Type", "application/json").Body([]byte(body)).Do(ctx)
	if err := res.Error(); err != nil {
		t.Fatalf("DELETE %s?dryRun=All with a body: %v", n.Name, err)
	}
	if nodeExists(t, c, n.Name) {
		t.Errorf("the API server honoured dryRun in the query of a DELETE with a body: the reason " +
			"noderecover puts it in the body is gone (still harmless: it sends both)")
	} else {
		measure(t, "scenario 8: a DELETE with dryRun=All only in its query (and DeleteOptions in its body) really deleted the node")
	}
}
