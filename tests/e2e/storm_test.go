package e2e

// Scenario 9, the storm guard on the real control plane: every simulated kubelet stops at once
// (the API server cut off from all its agents) for longer than the taint threshold, then
// resumes. A watcher with the default --max-unknown 50% taints none of them and, by the API
// server's audit log, sends no write at all; its log says once that the guard engaged and then
// that it cooled down and lifted. The must-fail half: the same silence with the guard off
// (--max-unknown 100%) taints them, so the silence really is one the guard had to hold back;
// and 2 silent nodes of 10, within the limit, are tainted. Owns no helper another scenario uses.

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func scenarioStorm(t *testing.T, c *cluster, tokenFile string) {
	ctx := context.Background()
	k := newKubelets(c.cs)
	defer k.removeAll(ctx)
	const total = 10
	nodes := make([]string, total)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("s9-%02d", i)
		if _, err := k.add(ctx, nodeSpec{name: nodes[i], alive: true}); err != nil {
			t.Fatal(err)
		}
	}
	// The guard counts every node of the cluster: only this scenario's may be there.
	onlyNodes(t, c, total)
	for _, n := range nodes {
		waitReady(t, c, n)
	}
	rec := recordNodes(t, c)
	started := time.Now()
	w := startWatcher(t, c, "s9", runArgs(c, tokenFile,
		"--self-node", "e2e-runner", "--taint-after", strconv.Itoa(taintAfter), "--poll", strconv.Itoa(pollEvery))...)
	defer func() {
		if !w.stopped {
			w.stop(t)
		}
	}()

	// Every kubelet stops: all ten go Unknown within a second or two of each other.
	for _, n := range nodes {
		k.stop(n)
	}
	stoppedAt := time.Now()
	var first, last time.Time
	for _, n := range nodes {
		ltt := waitUnknown(t, c, n)
		if first.IsZero() || ltt.Before(first) {
			first = ltt
		}
		if ltt.After(last) {
			last = ltt
		}
	}
	measure(t, "scenario 9: %d silent nodes Ready=Unknown %s after their heartbeats stopped, within %s of each other",
		total, fmtSeconds(last.Sub(stoppedAt)), fmtSeconds(last.Sub(first)))
	w.waitLog(t, 0, "Storm guard engaged: ", 10*time.Second)
	// Every node past the threshold, and three passes more: none tainted.
	sleepUntil(last.Add(time.Duration(taintAfter+3*pollEvery) * time.Second))
	for _, n := range nodes {
		if got := oosTaints(getNode(t, c, n)); len(got) != 0 {
			t.Errorf("%s tainted during a storm of %d of %d Unknown nodes (Unknown over %s, threshold %ds): %v",
				n, total, total, fmtSeconds(last.Sub(first)), taintAfter, got)
		}
	}

	// The kubelets resume: the guard cools down once the count is within the limit, then
	// lifts after its cooldown (the taint threshold); still nothing is written.
	off := len(w.log())
	for _, n := range nodes {
		k.resume(n)
	}
	var readyAt time.Time
	for _, n := range nodes {
		if r := waitReady(t, c, n); r.After(readyAt) {
			readyAt = r
		}
	}
	w.waitLog(t, off, "Storm guard cooling down: ", 15*time.Second)
	w.waitLog(t, off, "Storm guard lifted: ", time.Duration(taintAfter+15)*time.Second)
	lifted := time.Now()
	measure(t, "scenario 9: storm guard lifted %s after the last node was Ready again (cooldown %ds, the taint threshold)",
		fmtSeconds(lifted.Sub(readyAt)), taintAfter)
	time.Sleep(time.Duration(2*pollEvery) * time.Second)
	w.stop(t)
	rec.stop()

	lists := 0
	for _, ev := range auditEvents(t, c, saUser(saNamespace, saName), started) {
		switch ev.Verb {
		case "list":
			lists++
		case "get", "watch":
		default:
			t.Errorf("audit: the watcher sent %s %s during the storm (answered %+v)", ev.Verb, ev.RequestURI, ev.ResponseStatus)
		}
	}
	if lists == 0 {
		t.Errorf("audit: no node list by the watcher: the audit log does not show it ran")
	}
	log := w.log()
	for line, want := range map[string]int{"Storm guard engaged: ": 1, "Storm guard cooling down: ": 1, "Storm guard lifted: ": 1} {
		if got := strings.Count(log, line); got != want {
			t.Errorf("the watcher logged %q %d times, want %d", line, got, want)
		}
	}
	// It engages when the sixth node goes Unknown, or a later one when several go in one pass.
	if !regexp.MustCompile(fmt.Sprintf(`Storm guard engaged: ([6-9]|10) of %d nodes are Unknown, more than the limit of %d `, total, total/2)).MatchString(log) {
		t.Errorf("the engaged line does not give 6 to %d of %d Unknown and the limit %d:\n%s", total, total, total/2, log)
	}
	for _, n := range nodes {
		rec.check(t, n, func(n *corev1.Node) string {
			if _, ok := n.Annotations[ourAnno]; ok || len(oosTaints(n)) != 0 {
				return "tainted or annotated during the storm"
			}
			return ""
		})
	}
	measure(t, "scenario 9: storm of %d/%d Unknown: %d passes, no PATCH or DELETE in the audit log, guard engaged once, cooled and lifted once",
		total, total, lists)

	// 2 of 10 silent, within the limit of 5: `once` with the default guard taints those 2.
	common := append(connArgs(c, tokenFile), "--taint-after", strconv.Itoa(taintAfter), "--self-node", "e2e-runner")
	pair := nodes[:2]
	for _, n := range pair {
		k.stop(n)
	}
	sleepUntil(latest(waitUnknown(t, c, pair[0]), waitUnknown(t, c, pair[1])).Add(time.Duration(taintAfter+1) * time.Second))
	out, code := runOnce(t, common...)
	if code != 0 {
		t.Errorf("once with 2 of %d nodes silent: exit %d, want 0", total, code)
	}
	for i, n := range nodes {
		if got := hasOurTaint(getNode(t, c, n)); got != (i < len(pair)) {
			t.Errorf("2 of %d silent: %s tainted %v, want %v", total, n, got, i < len(pair))
		}
	}
	if strings.Contains(out, "Storm guard") {
		t.Errorf("once with 2 of %d silent spoke of the storm guard:\n%s", total, out)
	}

	// All ten silent again. The default guard holds the 8 new taints back and exits 1; with the
	// guard off the same pass taints them: the silence above was a storm to hold back.
	rest := nodes[len(pair):]
	for _, n := range rest {
		k.stop(n)
	}
	last = time.Time{}
	for _, n := range rest {
		last = latest(last, waitUnknown(t, c, n))
	}
	sleepUntil(last.Add(time.Duration(taintAfter+1) * time.Second))
	out, code = runOnce(t, common...)
	if code != 1 {
		t.Errorf("once holding back taints in a storm: exit %d, want 1", code)
	}
	if !strings.Contains(out, "Storm guard engaged: ") {
		t.Errorf("once in a storm did not log that the guard engaged:\n%s", out)
	}
	for _, n := range rest {
		if hasOurTaint(getNode(t, c, n)) {
			t.Errorf("%s tainted by once during a storm with the default --max-unknown", n)
		}
	}
	out, code = runOnce(t, append(common, "--max-unknown", "100%")...)
	if code != 0 {
		t.Errorf("once --max-unknown 100%%: exit %d, want 0", code)
	}
	tainted := 0
	for _, n := range nodes {
		if hasOurTaint(getNode(t, c, n)) {
			tainted++
		} else {
			t.Errorf("%s not tainted with the guard off (--max-unknown 100%%): the storm scenario proves nothing", n)
		}
	}
	measure(t, "scenario 9: 2 of %d silent: those 2 tainted; %d of %d: default once exit 1, nothing new; --max-unknown 100%%: %d of %d tainted",
		total, total, total, tainted, total)
}
