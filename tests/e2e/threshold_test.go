package e2e

// Scenario 12, acting within a second or so of the threshold on the real control plane: a
// watcher polling every 15 s with a 10 s taint threshold, and a simulated kubelet that stops
// just after the watcher's first pass. The node lifecycle controller marks it Unknown about 9 s
// later; the pass at 15 s sees it Unknown but not yet past the threshold, and the loop must wake
// when it crosses, not at the next poll. Measured by the API server's clock: from the node's
// lastTransitionTime + threshold to the audit log's completed PATCH that tainted it. The
// must-fail half: a loop that only polls would taint at the next poll, which the audit log's
// list times place; the scenario checks that this would have been later than the bound (6 s,
// well under the poll, generous against a loaded machine), so a poller fails it. The taint must
// not land before the threshold either. Owns no helper another scenario uses.

import (
	"context"
	"strconv"
	"testing"
	"time"
)

func scenarioThreshold(t *testing.T, c *cluster, tokenFile string) {
	ctx := context.Background()
	k := newKubelets(c.cs)
	defer k.removeAll(ctx)
	const (
		silent    = "s12-silent"
		every     = 15 // poll, seconds
		threshold = 10 // taint after, seconds
		bound     = 6 * time.Second
	)
	// 1 Unknown of 3 nodes: within the storm guard's default limit of 1.
	for _, n := range []string{silent, "s12-alive-1", "s12-alive-2"} {
		if _, err := k.add(ctx, nodeSpec{name: n, alive: true}); err != nil {
			t.Fatal(err)
		}
	}
	onlyNodes(t, c, 3)
	waitReady(t, c, silent)
	started := time.Now()
	user := saUser(saNamespace, saName)
	w := startWatcher(t, c, "s12", append(runArgs(c, tokenFile,
		"--self-node", "e2e-runner", "--taint-after", strconv.Itoa(threshold), "--poll", strconv.Itoa(every)), pollingOnly(t)...)...)
	defer func() {
		if !w.stopped {
			w.stop(t)
		}
	}()
	// The kubelet stops just after the first pass, so the pass that first sees the node
	// Unknown is the poll 15 s later, before the threshold.
	poll(t, c, "the watcher's first list", 10*time.Second, func() bool {
		for _, ev := range auditEvents(t, c, user, started) {
			if ev.Verb == "list" {
				return true
			}
		}
		return false
	})
	k.stop(silent)
	ltt := waitUnknown(t, c, silent)
	poll(t, c, silent+" tainted", time.Duration(every+threshold+20)*time.Second, func() bool {
		return hasOurTaint(getNode(t, c, silent))
	})
	w.stop(t)

	var lists []time.Time
	var patched time.Time
	for _, ev := range auditEvents(t, c, user, started) {
		switch {
		case ev.Verb == "list":
			lists = append(lists, ev.RequestReceivedTimestamp)
		case ev.Verb == "patch" && ev.ObjectRef != nil && ev.ObjectRef.Name == silent &&
			ev.ResponseStatus != nil && ev.ResponseStatus.Code == 200 && patched.IsZero():
			patched = ev.StageTimestamp
		}
	}
	if patched.IsZero() || len(lists) == 0 {
		t.Fatalf("audit: no successful PATCH of %s (%v) or no list (%d)", silent, patched, len(lists))
	}
	due := ltt.Add(threshold * time.Second)
	late := patched.Sub(due)
	// A loop that only polls lists at the first list's time plus whole polls, and taints at
	// the first of those at or past the threshold.
	poller := lists[0]
	for poller.Before(due) {
		poller = poller.Add(every * time.Second)
	}
	measure(t, "scenario 12: %s tainted %s after its threshold (Ready=Unknown at %s + %ds, by the API server's clock; poll %ds: a loop that only polls would have been %s late)",
		silent, fmtSeconds(late), ltt.UTC().Format(time.RFC3339), threshold, every, fmtSeconds(poller.Sub(due)))
	if poller.Sub(due) <= bound {
		t.Fatalf("timing: the threshold (%s) fell within %s of a poll (%s), so this run cannot tell a wake-up from a poll; Ready=Unknown came %s after the first pass",
			due.UTC().Format(time.RFC3339Nano), bound, poller.UTC().Format(time.RFC3339Nano), fmtSeconds(ltt.Sub(lists[0])))
	}
	if late < 0 {
		t.Errorf("%s tainted %s before its threshold (%s)", silent, fmtSeconds(-late), due.UTC().Format(time.RFC3339))
	}
	if late > bound {
		t.Errorf("%s tainted %s after its threshold, more than %s: the loop did not wake when the node crossed it", silent, fmtSeconds(late), bound)
	}
}
