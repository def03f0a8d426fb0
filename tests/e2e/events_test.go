package e2e

// Scenario 9, Events on the real control plane: after a taint by the ServiceAccount of
// `noderecover manifests` (whose Role grants create on events.k8s.io events in default), the
// API lists an Event regarding the node, found both ways an operator looks: by regarding
// (events.k8s.io/v1, regarding.name) and as `kubectl describe node` asks the core API
// (involvedObject name, kind Node, uid the node's). The server accepted its eventTime (six
// fractional digits) and its reportingController, or there would be no Event.

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func scenarioEvents(t *testing.T, c *cluster, tokenFile string) {
	ctx := context.Background()
	k := newKubelets(c.cs)
	defer k.removeAll(ctx)
	const node = "s9-events"
	specs := []nodeSpec{{name: node}, {name: "s9-alive-0", alive: true}, {name: "s9-alive-1", alive: true}}
	for _, s := range specs {
		if _, err := k.add(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	ltt := waitUnknown(t, c, node)
	sleepUntil(ltt.Add(time.Duration(taintAfter+1) * time.Second))
	before := time.Now()
	out, code := runOnce(t, append(connArgs(c, tokenFile), "--taint-after", strconv.Itoa(taintAfter),
		"--self-node", "e2e-runner")...)
	if code != 0 || !strings.Contains(out, "Tainted "+node) {
		t.Fatalf("once: exit %d, want 0 and a taint of %s:\n%s", code, node, out)
	}
	if strings.Contains(out, "Posting Event") {
		t.Errorf("posting the Event failed:\n%s", out)
	}
	n := getNode(t, c, node)

	list, err := c.cs.EventsV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "regarding.name=" + node})
	if err != nil {
		t.Fatalf("listing events.k8s.io/v1 Events by regarding.name=%s: %v", node, err)
	}
	var ev *eventsv1.Event
	for i := range list.Items {
		if list.Items[i].Reason == "OutOfServiceTainted" {
			if ev != nil {
				t.Errorf("two OutOfServiceTainted Events about %s", node)
			}
			ev = &list.Items[i]
		}
	}
	if ev == nil {
		t.Fatalf("no OutOfServiceTainted Event regarding %s among %d: %+v", node, len(list.Items), list.Items)
	}
	if ev.Type != corev1.EventTypeWarning || ev.Action != "Taint" || ev.ReportingController != "github-runner.exadev.io/noderecover" ||
		ev.ReportingInstance == "" {
		t.Errorf("Event type %q action %q controller %q instance %q", ev.Type, ev.Action, ev.ReportingController, ev.ReportingInstance)
	}
	if ev.Regarding.Kind != "Node" || ev.Regarding.APIVersion != "v1" || ev.Regarding.UID != n.UID || ev.Regarding.Namespace != "" {
		t.Errorf("Event regards %+v, want Node %s uid %s", ev.Regarding, node, n.UID)
	}
	if !strings.HasPrefix(ev.Note, "Tainted "+node+" node.kubernetes.io/out-of-service=nodeshutdown:NoExecute: not reporting for") ||
		!strings.Contains(out, ev.Note) {
		t.Errorf("Event note %q is not the log line's words:\n%s", ev.Note, out)
	}
	// MicroTime round trip: the server kept microseconds, and the time is our clock's, now
	if d := ev.EventTime.Sub(before); d < -2*time.Second || d > time.Minute {
		t.Errorf("eventTime %s, taint started %s", ev.EventTime.Format(metav1.RFC3339Micro), before.Format(metav1.RFC3339Micro))
	}
	// what `kubectl describe node` asks (pkg/describe: involvedObject name, namespace "", kind, uid)
	sel := "involvedObject.name=" + node + ",involvedObject.namespace=,involvedObject.kind=Node,involvedObject.uid=" + string(n.UID)
	core, err := c.cs.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		t.Fatalf("listing core Events as kubectl describe node does: %v", err)
	}
	found := false
	for _, e := range core.Items {
		found = found || (e.Reason == "OutOfServiceTainted" && e.Message == ev.Note)
	}
	if !found {
		t.Errorf("kubectl describe node %s would not show the Event (core list %s: %d items)", node, sel, len(core.Items))
	}
	measure(t, "scenario 9: Event %s %s about %s accepted (eventTime %s), listed by regarding.name and as kubectl describe node asks",
		ev.Type, ev.Reason, node, ev.EventTime.Format(metav1.RFC3339Micro))
}
