package e2e

// Scenario 11, never starved by a busy node, on the real control plane: another client changes
// a label on three Unknown nodes every 50 ms, so the resourceVersion a pass listed is often
// stale by the time it patches. They are still tainted within two passes of their threshold,
// and, once their kubelets resume while the changes go on, cleared within two passes of being
// Ready. The audit log shows each patch the API server refused because the node had changed
// (422) was followed at once by a re-read of that node and a new patch, not left to the next
// pass (the must-fail half: a watcher that does not retry fails that check; the scenario fails
// too when no patch was refused at all). Bounds are generous (two passes + 10 s): the times
// are measured and printed, not raced.

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const churnEvery = 50 * time.Millisecond

// churn changes a label on each of names every churnEvery until stop is called, which
// returns how many changes were made.
func churn(c *cluster, names []string) (stop func() int64) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var changes atomic.Int64
	for _, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(churnEvery)
			defer tick.Stop()
			for i := 0; ; i++ {
				patch := fmt.Sprintf(`{"metadata":{"labels":{"e2e.example.com/churn":"%d"}}}`, i)
				if _, err := c.cs.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err == nil {
					changes.Add(1)
				}
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
			}
		}()
	}
	return func() int64 {
		cancel()
		wg.Wait()
		return changes.Load()
	}
}

func scenarioConflictRetry(t *testing.T, c *cluster, tokenFile string) {
	ctx := context.Background()
	k := newKubelets(c.cs)
	defer k.removeAll(ctx)
	busy := []string{"s11-busy-0", "s11-busy-1", "s11-busy-2"}
	// 3 Unknown of 103 nodes: within the storm guard's default limit (half). The quiet nodes sort
	// after the busy ones and a page holds one node: a pass reads the busy nodes, then 100 more
	// pages, then patches them, 100 to 400 ms after it read them, as a pass over many nodes
	// does. (With 27 pages an idle machine read them all within 50 ms, one change of a busy
	// node, and no patch was refused: the retry went unexercised.)
	const quiet = 100
	specs := []nodeSpec{{name: busy[0]}, {name: busy[1]}, {name: busy[2]}}
	for i := 0; i < quiet; i++ {
		specs = append(specs, nodeSpec{name: fmt.Sprintf("s11-quiet-%02d", i), alive: true})
	}
	for _, s := range specs {
		if _, err := k.add(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	onlyNodes(t, c, len(specs))
	started := time.Now()
	w := startWatcher(t, c, "s11", append(runArgs(c, tokenFile,
		"--self-node", "e2e-runner", "--taint-after", strconv.Itoa(taintAfter), "--poll", strconv.Itoa(pollEvery),
		"--page-size", "1"), pollingOnly(t)...)...)
	defer func() {
		if !w.stopped {
			w.stop(t)
		}
	}()
	// Changed from the moment they are Unknown, until they are cleared.
	ltt := map[string]time.Time{}
	for _, n := range busy {
		ltt[n] = waitUnknown(t, c, n)
	}
	churnStart := time.Now()
	stopChurn := churn(c, busy)
	churning := true
	defer func() {
		if churning {
			stopChurn()
		}
	}()
	bound := time.Duration(2*pollEvery)*time.Second + 10*time.Second

	var worstTaint time.Duration
	for _, n := range busy {
		eligible := ltt[n].Add(taintAfter * time.Second)
		seen := poll(t, c, n+" tainted while changed every 50ms", time.Until(eligible)+bound, func() bool { return hasOurTaint(getNode(t, c, n)) })
		worstTaint = max(worstTaint, seen.Sub(eligible))
	}
	measure(t, "scenario 11: 3 nodes changed every %s tainted at most %s after their threshold (poll %ds, bound %s)",
		churnEvery, fmtSeconds(worstTaint), pollEvery, bound)

	// Their kubelets resume while the changes go on.
	for _, n := range busy {
		k.resume(n)
	}
	var worstClear time.Duration
	for _, n := range busy {
		readyAt := waitReady(t, c, n)
		cleared := poll(t, c, n+" cleared while changed every 50ms", bound, func() bool {
			nd := getNode(t, c, n)
			_, annotated := nd.Annotations[ourAnno]
			return !hasOurTaint(nd) && !annotated
		})
		worstClear = max(worstClear, cleared.Sub(readyAt))
	}
	changes := stopChurn()
	churning = false
	elapsed := time.Since(churnStart)
	measure(t, "scenario 11: the same nodes cleared at most %s after Ready again, still changed every %s (%d changes in %s: one per %dms per node)",
		fmtSeconds(worstClear), churnEvery, changes, fmtSeconds(elapsed), elapsed.Milliseconds()*int64(len(busy))/max(changes, 1))
	w.stop(t)

	// The watcher sends one request at a time: the one it sent right after a patch refused
	// because the node had changed (422) must be its re-read of that node (a list selecting it
	// by name), then a new patch, in the same pass; not the next pass's list.
	isBusy := map[string]bool{}
	for _, n := range busy {
		isBusy[n] = true
	}
	events := auditEvents(t, c, saUser(saNamespace, saName), started)
	sort.SliceStable(events, func(i, j int) bool {
		return events[i].RequestReceivedTimestamp.Before(events[j].RequestReceivedTimestamp)
	})
	patches, refused := 0, 0
	for i, ev := range events {
		if ev.Verb != "patch" || ev.ObjectRef == nil || !isBusy[ev.ObjectRef.Name] {
			continue
		}
		patches++
		if ev.ResponseStatus == nil || ev.ResponseStatus.Code != 422 {
			continue
		}
		refused++
		name := ev.ObjectRef.Name
		if i+1 >= len(events) {
			t.Errorf("audit: the 422 on a patch of %s was the watcher's last request: not retried", name)
			continue
		}
		next := events[i+1]
		reread := next.Verb == "list" && strings.Contains(next.RequestURI, "fieldSelector=metadata.name%3D"+name) ||
			next.Verb == "get" && next.ObjectRef != nil && next.ObjectRef.Name == name
		if !reread {
			t.Errorf("audit: the request after a 422 on a patch of %s was %s %s, not a re-read of the node: not retried in the pass",
				name, next.Verb, next.RequestURI)
		}
	}
	// Without a refusal the retry went unexercised and the scenario proved nothing; with 100
	// pages between reading a busy node and patching it, most first patches are refused.
	if refused == 0 {
		t.Errorf("audit: none of the watcher's %d patches of the busy nodes was refused as changed: the retry was not exercised", patches)
	}
	gaveUp := strings.Count(w.log(), "kept changing while it was acted on")
	measure(t, "scenario 11: the watcher sent %d patches of the busy nodes, %d refused as changed (422), each followed at once by a re-read of the node; gave up %d times",
		patches, refused, gaveUp)
}
