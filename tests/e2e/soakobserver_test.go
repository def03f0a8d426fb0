package e2e

// The soak's observer (soak_test.go): it trusts only the API server. A watch of every Node
// (every version, checked as it arrives), a watch of the replicas' Lease (its history of
// holders and renewals), and the audit log of every request each replica made (told apart by
// its ServiceAccount user). From those it checks the contract's invariants continuously and
// counts every check, made and broken. It never writes to the cluster and never reads the
// replicas' own logs for a verdict (only soak_test.go counts their lines, for floods).

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// nodeFacts: what the checks need of one version of a Node.
type nodeFacts struct {
	rv           string
	ready        corev1.ConditionStatus // "" when it has no Ready condition
	ltt          time.Time              // the Ready condition's lastTransitionTime
	ourTaint     bool
	annotated    bool
	oosCount     int
	operatorKept bool // the operator's taint, exactly as placed
	cpOrEtcd     bool
	etcd         bool
	removable    bool
}

// episode: a node Unknown (or back Ready with our taint on), waiting for an action.
type episode struct {
	node     string
	since    time.Time // Unknown: the lastTransitionTime; returned: when seen Ready again
	returned bool
}

type leaseVersion struct {
	holder   string
	renew    time.Time
	duration time.Duration
	seen     time.Time
}

// disruption: a time in which a fault may keep a replica (or both) from the API.
type disruption struct {
	kind     string
	replica  string // "a", "b" or "" for both
	from, to time.Time
	open     bool
}

type violation struct {
	at   time.Time
	rule string
	what string
}

type soakObserver struct {
	c        *cluster
	settings soakSettings
	operator map[string]corev1.Taint
	users    map[string]string // audit user -> replica "a"/"b"
	idPrefix map[string]string // lease identity prefix -> replica

	mu          sync.Mutex
	nodes       map[string]nodeFacts
	lastFacts   map[string]nodeFacts // survives the node's deletion
	etcdChange  map[string]time.Time // an etcd member's last Ready transition
	waiting     map[string]*episode
	unknown     int
	total       int
	stormSince  time.Time // zero: not above the limit
	stormSpans  []interval
	leases      []leaseVersion
	disruptions []*disruption
	checks      map[string]int
	broken      map[string]int
	violations  []violation
	actions     map[string]int // by the audit log: "taint by a", ...
	writes      map[string]int // every write request, by replica
	excused     int            // writes outside the term whose bytes the proxy itself held back
	lastReq     map[string]time.Time
	maxGap      map[string]time.Duration
	tainted     []time.Duration // delay past the threshold, no disruption in the window
	cleared     []time.Duration // delay past the return
	heldUp      func(replica string) []interval
	aliveSince  func(node string) (time.Time, bool) // when its kubelet last started, if running
	spurious    int                                 // Unknown while its kubelet ran (a machine too slow)
	relists     int
	auditOff    int64
	auditEvents int
	cancel      context.CancelFunc
	done        sync.WaitGroup
}

func newSoakObserver(c *cluster, s soakSettings, operator map[string]corev1.Taint) *soakObserver {
	return &soakObserver{c: c, settings: s, operator: operator,
		users:    map[string]string{saUser(saNamespace, "soak-replica-a"): "a", saUser(saNamespace, "soak-replica-b"): "b"},
		idPrefix: map[string]string{"soak-a-": "a", "soak-b-": "b"},
		nodes:    map[string]nodeFacts{}, lastFacts: map[string]nodeFacts{}, etcdChange: map[string]time.Time{}, waiting: map[string]*episode{},
		checks: map[string]int{}, broken: map[string]int{}, actions: map[string]int{}, writes: map[string]int{},
		lastReq: map[string]time.Time{}, maxGap: map[string]time.Duration{}}
}

func (o *soakObserver) check(rule string, ok bool, format string, args ...any) {
	o.checks[rule]++
	if ok {
		return
	}
	o.broken[rule]++
	if o.broken[rule] <= 5 { // said at once, too: the run goes on to its summary
		fmt.Printf("soak: %s BROKEN: %s: %s\n", time.Now().Format("15:04:05.000"), rule, fmt.Sprintf(format, args...))
	}
	if len(o.violations) < 200 {
		o.violations = append(o.violations, violation{time.Now(), rule, fmt.Sprintf(format, args...)})
	}
}

func factsOf(n *corev1.Node, op *corev1.Taint) nodeFacts {
	f := nodeFacts{rv: n.ResourceVersion}
	if r := readyOf(n); r != nil {
		f.ready, f.ltt = r.Status, r.LastTransitionTime.Time
	}
	for _, tn := range n.Spec.Taints {
		if tn.Key == oosKey {
			f.oosCount++
			if tn.Value == oosValue && tn.Effect == corev1.TaintEffectNoExecute {
				f.ourTaint = true
			}
		}
		if op != nil && tn.Key == op.Key && tn.Value == op.Value && tn.Effect == op.Effect {
			f.operatorKept = true
		}
	}
	_, f.annotated = n.Annotations[ourAnno]
	_, cp := n.Labels[cpLabel]
	_, f.etcd = n.Labels[etcdLabel]
	f.cpOrEtcd = cp || f.etcd
	f.removable = n.Labels[pruneLabel] == "true"
	return f
}

func (o *soakObserver) start(ctx context.Context) error {
	ctx, o.cancel = context.WithCancel(ctx)
	list, err := o.c.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	now := time.Now()
	o.mu.Lock()
	for i := range list.Items {
		o.node(watch.Added, &list.Items[i], now)
	}
	o.mu.Unlock()
	o.done.Add(3)
	go o.watchNodes(ctx, list.ResourceVersion)
	go o.watchLease(ctx)
	go o.tailAudit(ctx)
	return nil
}

func (o *soakObserver) stop() {
	o.cancel()
	o.done.Wait()
	o.readAudit(time.Now().Add(time.Hour)) // the rest, now that nothing more is coming
}

// watchNodes follows every Node change; when the watch ends it resumes from the last
// resourceVersion, and relists when that is too old (a relist may skip versions: counted).
func (o *soakObserver) watchNodes(ctx context.Context, rv string) {
	defer o.done.Done()
	for ctx.Err() == nil {
		w, err := o.c.cs.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			time.Sleep(500 * time.Millisecond)
			continue
		}
		gone := false
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				if st, ok := ev.Object.(*metav1.Status); ok && st.Code == 410 {
					gone = true
				}
				break
			}
			n, ok := ev.Object.(*corev1.Node)
			if !ok {
				continue
			}
			rv = n.ResourceVersion
			if ev.Type == watch.Bookmark {
				continue
			}
			o.mu.Lock()
			o.node(ev.Type, n, time.Now())
			o.mu.Unlock()
		}
		w.Stop()
		if gone && ctx.Err() == nil {
			list, err := o.c.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			if err != nil {
				time.Sleep(500 * time.Millisecond)
				continue
			}
			now := time.Now()
			o.mu.Lock()
			o.relists++
			present := map[string]bool{}
			for i := range list.Items {
				present[list.Items[i].Name] = true
				if o.nodes[list.Items[i].Name].rv != list.Items[i].ResourceVersion {
					o.node(watch.Modified, &list.Items[i], now)
				}
			}
			for name := range o.nodes {
				if !present[name] {
					o.node(watch.Deleted, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, now)
				}
			}
			o.mu.Unlock()
			rv = list.ResourceVersion
		}
	}
}

// node checks one version of a node against the one before it. o.mu held.
func (o *soakObserver) node(typ watch.EventType, n *corev1.Node, at time.Time) {
	name := n.Name
	prev, had := o.nodes[name]
	if typ == watch.Deleted {
		if had {
			delete(o.nodes, name)
			o.total--
			if prev.ready == corev1.ConditionUnknown {
				o.unknown--
			}
			delete(o.waiting, name)
			o.stormEdge(at)
		}
		return
	}
	var op *corev1.Taint
	if t, ok := o.operator[name]; ok {
		op = &t
	}
	f := factsOf(n, op)
	o.nodes[name] = f
	o.lastFacts[name] = f
	if f.etcd && (!had || prev.ready != f.ready) {
		o.etcdChange[name] = at
	}
	if !had {
		o.total++
	}
	if (prev.ready == corev1.ConditionUnknown) != (f.ready == corev1.ConditionUnknown) || !had {
		if f.ready == corev1.ConditionUnknown {
			o.unknown++
			if since, alive := o.aliveSince(name); had && alive && at.Sub(since) > 15*time.Second {
				o.spurious++
			}
		} else if had && prev.ready == corev1.ConditionUnknown {
			o.unknown--
		}
	}
	o.stormEdge(at)

	o.check("at most one out-of-service taint", f.oosCount <= 1, "%s has %d out-of-service taints (rv %s)", name, f.oosCount, f.rv)
	if op != nil {
		o.check("an operator's taint is never touched", f.operatorKept && !f.annotated,
			"%s (operator-tainted): operator taint present %v, our annotation %v (rv %s)", name, f.operatorKept, f.annotated, f.rv)
		return
	}
	o.check("our taint only with our annotation, and the reverse", f.ourTaint == f.annotated,
		"%s: our taint %v, our annotation %v (rv %s)", name, f.ourTaint, f.annotated, f.rv)
	if f.ourTaint && !prev.ourTaint {
		o.check("a taint only on an Unknown node", f.ready == corev1.ConditionUnknown,
			"%s tainted while Ready is %q (rv %s)", name, f.ready, f.rv)
		if f.ready == corev1.ConditionUnknown {
			early := f.ltt.Add(o.settings.taintAfter).Sub(at)
			o.check("no taint before the threshold (API server's clock)", early <= 0,
				"%s tainted %s before its %s threshold: Unknown since %s, taint seen %s", name,
				fmtSeconds(early), o.settings.taintAfter, f.ltt.Format(time.RFC3339), at.Format("15:04:05.000"))
			if !o.stormSince.IsZero() && at.Sub(o.stormSince) > 5*time.Second {
				o.check("nothing new tainted in a storm", false, "%s tainted %s into a storm of %d Unknown of %d",
					name, fmtSeconds(at.Sub(o.stormSince)), o.unknown, o.total)
			} else {
				o.check("nothing new tainted in a storm", true, "")
			}
			if w := o.waiting[name]; w != nil && !w.returned {
				o.tainted = append(o.tainted, at.Sub(w.since.Add(o.settings.taintAfter)))
				o.check("tainted in time", at.Before(o.deadline(w.since.Add(o.settings.taintAfter), o.settings.act)),
					"%s tainted %s after its threshold", name, fmtSeconds(at.Sub(w.since.Add(o.settings.taintAfter))))
			}
		}
	}
	if !f.ourTaint && prev.ourTaint && had {
		o.check("a clear only on a Ready node", f.ready == corev1.ConditionTrue, "%s cleared while Ready is %q", name, f.ready)
		if w := o.waiting[name]; w != nil && w.returned {
			o.cleared = append(o.cleared, at.Sub(w.since))
			o.check("cleared in time", at.Before(o.deadline(w.since, o.settings.clear)),
				"%s cleared %s after it was Ready again", name, fmtSeconds(at.Sub(w.since)))
		}
	}
	// what is awaited now
	switch {
	case f.ready == corev1.ConditionUnknown && !f.ourTaint:
		if w := o.waiting[name]; w == nil || w.returned || !w.since.Equal(f.ltt) {
			o.waiting[name] = &episode{node: name, since: f.ltt}
		}
	case f.ready == corev1.ConditionTrue && f.ourTaint:
		if w := o.waiting[name]; w == nil || !w.returned {
			o.waiting[name] = &episode{node: name, since: at, returned: true}
		}
	default:
		delete(o.waiting, name)
	}
}

// stormEdge notes when the Unknown count goes above the guard's limit and back. o.mu held.
func (o *soakObserver) stormEdge(at time.Time) {
	above := o.unknown > o.total*o.settings.stormPercent/100
	switch {
	case above && o.stormSince.IsZero():
		o.stormSince = at
	case !above && !o.stormSince.IsZero():
		o.stormSpans = append(o.stormSpans, interval{o.stormSince, at})
		o.stormSince = time.Time{}
	}
}

// deadline: from + base, pushed back by every disruption (and storm, plus the guard's
// cooldown) that overlaps the wait, each given recovery time after it ends. o.mu held.
func (o *soakObserver) deadline(from time.Time, base time.Duration) time.Time {
	end := from.Add(base)
	now := time.Now()
	var spans []interval
	for _, d := range o.disruptions {
		to := d.to
		if d.open {
			to = now
		}
		spans = append(spans, interval{d.from, to.Add(o.settings.recovery)})
	}
	for _, s := range o.stormSpans {
		spans = append(spans, interval{s.from, s.to.Add(o.settings.taintAfter + o.settings.act)})
	}
	if !o.stormSince.IsZero() {
		spans = append(spans, interval{o.stormSince, now.Add(o.settings.taintAfter + o.settings.act)})
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].from.Before(spans[j].from) })
	for _, s := range spans {
		if s.from.After(end) || !s.to.After(from) {
			continue
		}
		start := s.from
		if start.Before(from) {
			start = from
		}
		end = end.Add(s.to.Sub(start))
	}
	return end
}

// sweep fails every wait whose deadline has passed. Called every second.
func (o *soakObserver) sweep() {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := time.Now()
	for name, w := range o.waiting {
		if _, op := o.operator[name]; op {
			continue
		}
		if w.returned {
			if dl := o.deadline(w.since, o.settings.clear); now.After(dl) {
				o.check("cleared in time", false, "%s Ready again since %s and still carries our taint (deadline %s)",
					name, w.since.Format("15:04:05"), dl.Format("15:04:05"))
				delete(o.waiting, name)
			}
			continue
		}
		if dl := o.deadline(w.since.Add(o.settings.taintAfter), o.settings.act); now.After(dl) {
			o.check("tainted in time", false, "%s Unknown since %s and still not tainted (deadline %s)",
				name, w.since.Format("15:04:05"), dl.Format("15:04:05"))
			delete(o.waiting, name)
		}
	}
}

func (o *soakObserver) disrupt(kind, replica string) *disruption {
	o.mu.Lock()
	defer o.mu.Unlock()
	d := &disruption{kind: kind, replica: replica, from: time.Now(), open: true}
	o.disruptions = append(o.disruptions, d)
	return d
}

func (o *soakObserver) end(d *disruption) {
	o.mu.Lock()
	defer o.mu.Unlock()
	d.to, d.open = time.Now(), false
}

// watchLease records every version of the replicas' Lease.
func (o *soakObserver) watchLease(ctx context.Context) {
	defer o.done.Done()
	leases := o.c.cs.CoordinationV1().Leases(saNamespace)
	rv := ""
	for ctx.Err() == nil {
		if rv == "" {
			l, err := leases.Get(ctx, o.settings.leaseName, metav1.GetOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				time.Sleep(200 * time.Millisecond)
				continue
			}
			if err == nil {
				o.lease(l)
				rv = l.ResourceVersion
			} else {
				rv = "0"
			}
		}
		w, err := leases.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + o.settings.leaseName, ResourceVersion: rv})
		if err != nil {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				rv = ""
				break
			}
			if l, ok := ev.Object.(*coordinationv1.Lease); ok {
				rv = l.ResourceVersion
				o.lease(l)
			}
		}
		w.Stop()
	}
}

func (o *soakObserver) lease(l *coordinationv1.Lease) {
	v := leaseVersion{seen: time.Now()}
	if l.Spec.HolderIdentity != nil {
		v.holder = *l.Spec.HolderIdentity
	}
	if l.Spec.RenewTime != nil {
		v.renew = l.Spec.RenewTime.Time
	}
	if l.Spec.LeaseDurationSeconds != nil {
		v.duration = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	o.mu.Lock()
	o.leases = append(o.leases, v)
	o.mu.Unlock()
}

// leader: the replica the Lease names now ("" when none).
func (o *soakObserver) leader() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.leases) == 0 {
		return ""
	}
	return o.replicaOf(o.leases[len(o.leases)-1].holder)
}

func (o *soakObserver) lastRenewal(replica string) time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := len(o.leases) - 1; i >= 0; i-- {
		if o.replicaOf(o.leases[i].holder) == replica {
			return o.leases[i].seen
		}
	}
	return time.Time{}
}

func (o *soakObserver) replicaOf(holder string) string {
	for p, r := range o.idPrefix {
		if strings.HasPrefix(holder, p) {
			return r
		}
	}
	return ""
}

// inTerm: whether the Lease, as last written before at, names replica and has not run out. o.mu held.
func (o *soakObserver) inTerm(replica string, at time.Time) (bool, string) {
	var cur *leaseVersion
	for i := range o.leases {
		if !o.leases[i].renew.After(at) && (cur == nil || !o.leases[i].renew.Before(cur.renew)) {
			cur = &o.leases[i]
		}
	}
	if cur == nil {
		return false, "no Lease written before it"
	}
	if o.replicaOf(cur.holder) != replica {
		return false, fmt.Sprintf("the Lease was held by %q (renewed %s)", cur.holder, cur.renew.Format("15:04:05.000"))
	}
	if at.After(cur.renew.Add(cur.duration)) {
		return false, fmt.Sprintf("its own Lease ran out at %s", cur.renew.Add(cur.duration).Format("15:04:05.000"))
	}
	return true, ""
}

func (o *soakObserver) tailAudit(ctx context.Context) {
	defer o.done.Done()
	for ctx.Err() == nil {
		// events a few seconds old: the Lease watch has seen what was written before them
		o.readAudit(time.Now().Add(-3 * time.Second))
		o.sweep()
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

var auditPending []auditEvent

// readAudit reads the audit log's new lines and checks the events older than before.
func (o *soakObserver) readAudit(before time.Time) {
	f, err := os.Open(o.c.auditLog)
	if err == nil {
		st, _ := f.Stat()
		if st != nil && st.Size() < o.auditOff {
			o.auditOff = 0 // rotated
		}
		f.Seek(o.auditOff, io.SeekStart)
		r := bufio.NewReaderSize(f, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				break // a partial line is read again next time
			}
			o.auditOff += int64(len(line))
			var ev auditEvent
			if json.Unmarshal(line, &ev) != nil || ev.Stage != "ResponseComplete" {
				continue
			}
			if _, ours := o.users[ev.User.Username]; ours {
				auditPending = append(auditPending, ev)
			}
		}
		f.Close()
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	keep := auditPending[:0]
	for _, ev := range auditPending {
		if ev.RequestReceivedTimestamp.After(before) {
			keep = append(keep, ev)
			continue
		}
		o.audit(ev)
	}
	auditPending = keep
}

// audit checks one request of a replica. o.mu held.
func (o *soakObserver) audit(ev auditEvent) {
	o.auditEvents++
	r := o.users[ev.User.Username]
	at := ev.RequestReceivedTimestamp
	if last, ok := o.lastReq[r]; ok && at.Sub(last) > o.maxGap[r] {
		o.maxGap[r] = at.Sub(last)
	}
	if last := o.lastReq[r]; at.After(last) {
		o.lastReq[r] = at
	}
	if ev.ObjectRef == nil || ev.ObjectRef.Resource != "nodes" {
		return
	}
	switch ev.Verb {
	case "get", "list", "watch":
		return
	}
	o.writes[r]++
	code := 0
	if ev.ResponseStatus != nil {
		code = ev.ResponseStatus.Code
	}
	body := string(ev.RequestObject)
	kind := ev.Verb
	if ev.Verb == "patch" {
		switch {
		case strings.Contains(body, `"op":"add"`) && strings.Contains(body, oosKey):
			kind = "taint"
		case strings.Contains(body, `"op":"remove"`):
			kind = "clear"
		}
	}
	o.actions[fmt.Sprintf("%s %d", kind, code)]++
	ok, why := o.inTerm(r, at)
	if !ok {
		for _, h := range o.heldUp(r) {
			if !at.Before(h.from) && at.Before(h.to.Add(2*time.Second)) {
				ok = true
				o.excused++
				break
			}
		}
	}
	o.check("no write outside the replica's Lease term", ok, "replica %s sent %s %s at %s (answered %d): %s",
		r, ev.Verb, ev.RequestURI, at.Format("15:04:05.000"), code, why)
	if ev.Verb == "delete" && code >= 200 && code < 300 {
		name := ev.ObjectRef.Name
		f := o.lastFacts[name]
		o.check("never a delete of a control-plane or etcd node", !f.cpOrEtcd, "replica %s deleted %s, a control-plane or etcd node", r, name)
		ready := 0
		for n, g := range o.nodes {
			if g.etcd && g.ready == corev1.ConditionTrue && n != name {
				ready++
			}
		}
		o.check("only a removable node deleted", f.removable, "replica %s deleted %s, not labelled %s=true", r, name, pruneLabel)
		o.check("never a delete below the quorum floor", ready+o.etcdFlapped(at) >= 3,
			"replica %s deleted %s with %d Ready etcd members left", r, name, ready)
	}
}

// etcdFlapped: etcd members not Ready now that changed since shortly before at (the replica's
// list may have seen them Ready). o.mu held.
func (o *soakObserver) etcdFlapped(at time.Time) int {
	n := 0
	for name, t := range o.etcdChange {
		if f, ok := o.nodes[name]; ok && f.ready != corev1.ConditionTrue && t.After(at.Add(-5*time.Second)) {
			n++
		}
	}
	return n
}
