package e2e

// Scenario 10, the opt-out label on the real control plane: of two nodes silent past the
// threshold in one run, the one labelled github-runner.exadev.io/no-recovery=true is never
// tainted (the audit log has no PATCH of it) while the other is; the watcher says why once,
// not every pass; and our own taint on an opted-out node that is Ready is still cleared.

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

const optOutLabel = "github-runner.exadev.io/no-recovery"

func scenarioOptOut(t *testing.T, c *cluster, tokenFile string) {
	ctx := context.Background()
	k := newKubelets(c.cs)
	defer k.removeAll(ctx)
	const (
		out      = "s10-opted-out"
		in       = "s10-plain"
		returned = "s10-opted-out-ready"
	)
	optOut := map[string]string{optOutLabel: "true"}
	ours := corev1.Taint{Key: oosKey, Value: oosValue, Effect: corev1.TaintEffectNoExecute}
	// 2 Unknown of 5 nodes: within the storm guard's default limit of 2.
	for _, s := range []nodeSpec{
		{name: out, labels: optOut},
		{name: in},
		{name: returned, alive: true, labels: optOut, taints: []corev1.Taint{ours},
			annotations: map[string]string{ourAnno: "2026-01-01T00:00:00Z"}},
		{name: "s10-alive-1", alive: true},
		{name: "s10-alive-2", alive: true},
	} {
		if _, err := k.add(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	onlyNodes(t, c, 5)
	rec := recordNodes(t, c)
	started := time.Now()
	// the opted-out node is said once over several passes: a scenario of the polling loop
	w := startWatcher(t, c, "s10", runArgs(c, tokenFile, append([]string{
		"--self-node", "e2e-runner", "--taint-after", strconv.Itoa(taintAfter), "--poll", strconv.Itoa(pollEvery)},
		pollingOnly(t)...)...)...)
	defer func() {
		if !w.stopped {
			w.stop(t)
		}
	}()

	// Ready and opted out: our taint still goes, as clearing always may.
	poll(t, c, returned+" (opted out, Ready) cleared of our taint", 20*time.Second, func() bool {
		n := getNode(t, c, returned)
		_, annotated := n.Annotations[ourAnno]
		return !hasOurTaint(n) && !annotated
	})

	lttOut := waitUnknown(t, c, out)
	lttIn := waitUnknown(t, c, in)
	poll(t, c, in+" tainted", time.Duration(taintAfter+20)*time.Second, func() bool { return hasOurTaint(getNode(t, c, in)) })
	// The opted-out node past its threshold for five passes more.
	eligible := lttOut.Add(taintAfter * time.Second)
	sleepUntil(latest(eligible, lttIn.Add(taintAfter*time.Second)).Add(time.Duration(5*pollEvery) * time.Second))
	line := "Not tainting " + out + ": it carries " + optOutLabel + "=true"
	w.waitLog(t, 0, line, 5*time.Second)
	w.stop(t)
	rec.stop()

	if n := strings.Count(w.log(), line); n != 1 {
		t.Errorf("the watcher logged %q %d times over several passes, want once", line, n)
	}
	if strings.Contains(w.log(), "Tainted "+out+" ") {
		t.Errorf("the log says the opted-out %s was tainted", out)
	}
	rec.check(t, out, func(n *corev1.Node) string {
		if _, ok := n.Annotations[ourAnno]; ok || len(oosTaints(n)) != 0 {
			return "opted out, but tainted or annotated"
		}
		return ""
	})
	passes, patchedIn := 0, false
	for _, ev := range auditEvents(t, c, saUser(saNamespace, saName), started) {
		if ev.Verb == "list" && ev.StageTimestamp.After(eligible) {
			passes++
		}
		if ev.ObjectRef == nil || ev.Verb == "get" || ev.Verb == "list" {
			continue
		}
		switch ev.ObjectRef.Name {
		case out:
			t.Errorf("audit: the watcher sent %s %s for the opted-out node", ev.Verb, ev.RequestURI)
		case in:
			patchedIn = patchedIn || ev.Verb == "patch" && ev.ResponseStatus != nil && ev.ResponseStatus.Code == 200
		}
	}
	if !patchedIn {
		t.Errorf("audit: no successful PATCH of %s, the silent node without the label", in)
	}
	if passes < 3 {
		t.Errorf("only %d passes while %s was past its threshold: \"once\" was not tested over several", passes, out)
	}
	measure(t, "scenario 10: opted-out silent node untainted (no PATCH in the audit log), the other tainted, reason logged once over %d passes; our taint on a Ready opted-out node cleared", passes)
}
