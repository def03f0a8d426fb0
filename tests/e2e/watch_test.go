package e2e

// Scenarios 15-19, following the nodes with a watch (issue 15), on the real control plane. Every
// watcher here runs `run --poll 60`: a build that only lists every poll acts up to a minute late
// and fails each scenario's timing, and each also checks by the audit log that the watcher
// opened a watch. Times are the API server's: a node's Ready lastTransitionTime (written by the
// node lifecycle controller) against the audit log's completed PATCH.
//
//	15 every dying node tainted within threshold + 2 s of its Unknown, nodes dying 7 s apart;
//	16 kube-apiserver restarted mid-watch: a node that died during the restart is tainted, one
//	   that came back is cleared, each within 2 s of the later of its due time and the watcher
//	   being back;
//	17 etcd compacted past the watcher's resourceVersion while the API server is down: the
//	   resumed watch is too old (410), and the next request is a list (a relist), not the same
//	   watch again;
//	18 labels changing every 50 ms on a dying node (a MODIFIED event each): tainted within
//	   threshold + 3 s, the other dying node too, and cleared within 3 s of Ready;
//	19 two replicas with --leader-elect over a quiet watch (nodes heartbeat by their Lease only,
//	   so no node event comes): the leader keeps renewing, nobody else takes the Lease, the
//	   standby neither lists nor watches, and a node dying at the end is tainted in time. The
//	   quiet spell is NODERECOVER_E2E_QUIET_WATCH (a Go duration; default 2m, 10m for a soak).
//
// It never writes to a node the watcher acts on except through the simulated kubelets and the
// label churn, and it restarts only kube-apiserver (same flags, same etcd, same audit log).

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	watchPoll  = 60 // --poll of every watcher here: a poller is up to a minute late
	watchBound = 2 * time.Second
)

// watchBoundOf is watchBound on etcd and a second more on kine: kine looks for new rows in its
// database every second (--datastore-poll-interval) when none was written through it, so a
// change can reach kube-apiserver's watch cache, and a list from the cache that waits for it,
// up to a second later. Measured (BENCHMARKS.md, "On kine"): the worst of 8 taints 1.7 s after
// the threshold on kine, 1.4 s on etcd; the quieter run, medians of 1.0 and 0.2 s.
func watchBoundOf(c *cluster) time.Duration {
	if c.datastore == "kine" {
		return watchBound + time.Second
	}
	return watchBound
}

var (
	watchFlagOnce sync.Once
	watchFlag     bool
)

// binaryWatches says whether the binary under test knows --watch (`manifests --watch=false`
// is accepted, not refused as an unknown option): the watch's scenarios need it, and the
// polling scenarios pass --watch=false only then.
func binaryWatches(t *testing.T) bool {
	t.Helper()
	bin := noderecoverBin(t)
	watchFlagOnce.Do(func() {
		watchFlag = exec.Command(bin, "manifests", "--taint-after", "300", "--watch=false").Run() == nil
	})
	return watchFlag
}

// pollingOnly is --watch=false for a scenario whose meaning is the polling loop (passes, pages
// per pass, the next pass's list), or nothing for a binary that only polls anyway.
func pollingOnly(t *testing.T) []string {
	t.Helper()
	if binaryWatches(t) {
		return []string{"--watch=false"}
	}
	return nil
}

// ---- the audit log, every stage (a watch is ResponseStarted while it is open) ----

type auditRecord struct {
	AuditID    string `json:"auditID"`
	Stage      string `json:"stage"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource string `json:"resource"`
		Name     string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
	StageTimestamp           time.Time `json:"stageTimestamp"`
}

func (r auditRecord) resource() string {
	if r.ObjectRef == nil {
		return ""
	}
	return r.ObjectRef.Resource
}

func (r auditRecord) code() int {
	if r.ResponseStatus == nil {
		return 0
	}
	return r.ResponseStatus.Code
}

func (r auditRecord) query(key string) string {
	u, err := url.ParseRequestURI(r.RequestURI)
	if err != nil {
		return ""
	}
	return u.Query().Get(key)
}

// requests returns user's requests received since from, one record each (the last stage seen:
// ResponseComplete, or ResponseStarted for a watch still open), in the order received.
func requests(t *testing.T, c *cluster, user string, from time.Time) []auditRecord {
	t.Helper()
	f, err := os.Open(c.auditLog)
	if err != nil {
		t.Fatalf("audit log: %v", err)
	}
	defer f.Close()
	byID := map[string]int{}
	var out []auditRecord
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var r auditRecord
		if json.Unmarshal(sc.Bytes(), &r) != nil || r.User.Username != user || r.RequestReceivedTimestamp.Before(from) {
			continue
		}
		if i, ok := byID[r.AuditID]; ok {
			if r.Stage == "ResponseComplete" || out[i].Stage != "ResponseComplete" {
				out[i] = r
			}
			continue
		}
		byID[r.AuditID] = len(out)
		out = append(out, r)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].RequestReceivedTimestamp.Before(out[j].RequestReceivedTimestamp) })
	return out
}

func nodeWatches(rs []auditRecord) []auditRecord {
	var out []auditRecord
	for _, r := range rs {
		if r.Verb == "watch" && r.resource() == "nodes" {
			out = append(out, r)
		}
	}
	return out
}

// firstPatch is the completed time of the first PATCH of name answered 200 since from.
func firstPatch(t *testing.T, c *cluster, user, name string, from time.Time) time.Time {
	t.Helper()
	for _, r := range requests(t, c, user, from) {
		if r.Verb == "patch" && r.ObjectRef != nil && r.ObjectRef.Name == name && r.code() == 200 && r.Stage == "ResponseComplete" {
			return r.StageTimestamp
		}
	}
	t.Fatalf("audit: no PATCH of %s answered 200 since %s", name, from.UTC().Format(time.RFC3339Nano))
	return time.Time{}
}

// requireWatch fails unless user opened a watch on nodes since from (answered 200).
func requireWatch(t *testing.T, c *cluster, user string, from time.Time, what string) {
	t.Helper()
	for _, r := range nodeWatches(requests(t, c, user, from)) {
		if r.code() == 200 {
			return
		}
	}
	t.Errorf("audit: %s: no watch of nodes by %s since %s: the watcher only lists", what, user, from.UTC().Format(time.RFC3339))
}

// ---- node state ----

func waitTainted(t *testing.T, c *cluster, name string, timeout time.Duration) time.Time {
	t.Helper()
	return poll(t, c, name+" tainted out-of-service", timeout, func() bool { return hasOurTaint(getNode(t, c, name)) })
}

func waitCleared(t *testing.T, c *cluster, name string, timeout time.Duration) time.Time {
	t.Helper()
	return poll(t, c, name+" cleared", timeout, func() bool {
		n := getNode(t, c, name)
		_, annotated := n.Annotations[ourAnno]
		return !hasOurTaint(n) && !annotated
	})
}

// readyTransition is the lastTransitionTime of name's Ready condition once it is status.
func readyTransition(t *testing.T, c *cluster, name string, status corev1.ConditionStatus, timeout time.Duration) time.Time {
	t.Helper()
	var ltt time.Time
	poll(t, c, name+" Ready="+string(status), timeout, func() bool {
		if r := readyOf(getNode(t, c, name)); r != nil && r.Status == status {
			ltt = r.LastTransitionTime.Time
			return true
		}
		return false
	})
	return ltt
}

// ---- kube-apiserver and etcd ----

// restartAPIServer stops kube-apiserver (SIGTERM, as a rolling update does), runs whileDown,
// starts it again with the same flags (same etcd, certificates, tokens and audit log) and waits
// for /readyz. It returns when it stopped and when it was ready again.
func restartAPIServer(t *testing.T, c *cluster, whileDown func()) (down, up time.Time) {
	t.Helper()
	c.mu.Lock()
	idx := -1
	for i, p := range c.procs {
		if p.name == "kube-apiserver" {
			idx = i
		}
	}
	c.mu.Unlock()
	if idx < 0 {
		t.Fatal("no kube-apiserver process")
	}
	old := c.procs[idx]
	args := old.cmd.Args[1:]
	old.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-old.done:
	case <-time.After(30 * time.Second):
		old.cmd.Process.Kill()
		<-old.done
	}
	down = time.Now()
	if whileDown != nil {
		whileDown()
	}
	f, err := os.OpenFile(old.log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "---- e2e: restarted at %s ----\n", time.Now().UTC().Format(time.RFC3339Nano))
	cmd := exec.Command(old.cmd.Path, args...)
	cmd.Stdout, cmd.Stderr, cmd.Dir = f, f, c.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("restart kube-apiserver: %v", err)
	}
	p := &proc{name: old.name, cmd: cmd, log: old.log, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	c.mu.Lock()
	c.procs[idx] = p
	c.mu.Unlock()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.caPEM)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if err := waitHTTP(context.Background(), p, client, c.server+"/readyz", c.adminToken, 90*time.Second,
		func(code int, _ []byte) bool { return code == 200 }); err != nil {
		t.Fatalf("kube-apiserver after restart: %v", err)
	}
	return down, time.Now()
}

// etcdCall posts a JSON request to etcd's v3 HTTP gateway.
func etcdCall(t *testing.T, c *cluster, path string, req any, resp any) {
	t.Helper()
	b, _ := json.Marshal(req)
	r, err := http.Post(c.etcdURL+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatalf("etcd %s: %v", path, err)
	}
	defer r.Body.Close()
	body, _ := io.ReadAll(r.Body)
	if r.StatusCode != 200 {
		t.Fatalf("etcd %s: %d %s", path, r.StatusCode, body)
	}
	if resp != nil {
		if err := json.Unmarshal(body, resp); err != nil {
			t.Fatalf("etcd %s: %v: %s", path, err, body)
		}
	}
}

// etcdBumpAndCompact writes a key of its own (so the revision moves past every resourceVersion
// anyone saw) and compacts etcd's history up to that revision, which it returns.
func etcdBumpAndCompact(t *testing.T, c *cluster) int64 {
	t.Helper()
	var put struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	b64 := base64.StdEncoding.EncodeToString
	etcdCall(t, c, "/v3/kv/put", map[string]string{"key": b64([]byte("/e2e/compaction-bump")), "value": b64([]byte(time.Now().String()))}, &put)
	rev, err := strconv.ParseInt(put.Header.Revision, 10, 64)
	if err != nil || rev <= 0 {
		t.Fatalf("etcd put: revision %q", put.Header.Revision)
	}
	etcdCall(t, c, "/v3/kv/compaction", map[string]any{"revision": strconv.FormatInt(rev, 10), "physical": true}, nil)
	return rev
}

// kineBumpAndCompact is etcdBumpAndCompact on kine, through its etcd gRPC API (it has no HTTP
// gateway): it writes a key of its own kineCompactMinRetain+1 times, so the revision moves past
// every resourceVersion anyone saw by more than kine keeps, then waits for kine's own compactor
// (every kineCompactInterval; kine ignores a client's compaction request while its compactor
// runs) to compact past them, and returns the revision it compacted to, from kine's log.
func kineBumpAndCompact(t *testing.T, c *cluster) int64 {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{c.etcdURL}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("kine: %v", err)
	}
	defer cli.Close()
	var rev int64
	for i := 0; i <= kineCompactMinRetain; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r, err := cli.Put(ctx, "/e2e/compaction-bump", time.Now().String())
		cancel()
		if err != nil {
			t.Fatalf("kine put: %v", err)
		}
		rev = r.Header.Revision
	}
	want := rev - kineCompactMinRetain
	compactedTo := regexp.MustCompile(`compacted to ([0-9]+)/`)
	deadline := time.Now().Add(60 * time.Second)
	for {
		b, err := os.ReadFile(filepath.Join(c.dir, "kine.log"))
		if err != nil {
			t.Fatalf("kine's log: %v", err)
		}
		var last int64
		for _, m := range compactedTo.FindAllSubmatch(b, -1) {
			last, _ = strconv.ParseInt(string(m[1]), 10, 64)
		}
		if last >= want {
			return last
		}
		if time.Now().After(deadline) {
			t.Fatalf("kine did not compact to revision %d within 60 s of the write (last compacted to %d; --compact-interval %s)", want, last, kineCompactInterval)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// ---- the scenarios ----

// TestWatch runs scenarios 15-19 on the shared control plane, after TestNodeRecover. Alone:
// NODERECOVER_E2E_RUN='TestWatch' (or 'TestWatch/16').
func TestWatch(t *testing.T) {
	c := getCluster(t)
	noderecoverBin(t)
	applyManifests(t, c, false)
	tokenFile, _ := saToken(t, c, saNamespace, saName)
	if !binaryWatches(t) {
		t.Logf("the binary has no --watch: these scenarios are expected to fail on it (each proves it needs the watch)")
	}
	t.Run("15_watch_threshold", func(t *testing.T) { scenarioWatchThreshold(t, c, tokenFile) })
	t.Run("18_watch_label_churn", func(t *testing.T) { scenarioWatchChurn(t, c, tokenFile) })
	t.Run("19_watch_lease_quiet", func(t *testing.T) { scenarioWatchLease(t, c) })
	t.Run("16_watch_apiserver_restart", func(t *testing.T) { scenarioWatchRestart(t, c, tokenFile) })
	t.Run("17_watch_compaction_relist", func(t *testing.T) { scenarioWatchCompaction(t, c, tokenFile) })
}

func watchArgs(c *cluster, tokenFile string, threshold int, extra ...string) []string {
	return runArgs(c, tokenFile, append([]string{"--self-node", "e2e-runner", "--taint-after", strconv.Itoa(threshold),
		"--poll", strconv.Itoa(watchPoll)}, extra...)...)
}

// scenario 15: --poll 60 --taint-after 5, four nodes of ten dying 7 s apart (within the storm
// guard's default limit of five): each tainted within threshold + 2 s of its Unknown.
func scenarioWatchThreshold(t *testing.T, c *cluster, tokenFile string) {
	ctx := context.Background()
	k := newKubelets(c.cs)
	defer k.removeAll(ctx)
	const threshold, total = 5, 10
	var dying []string
	for i := 0; i < total; i++ {
		name := fmt.Sprintf("s15-%02d", i)
		if i < 4 {
			dying = append(dying, name)
		}
		if _, err := k.add(ctx, nodeSpec{name: name, alive: true}); err != nil {
			t.Fatal(err)
		}
	}
	onlyNodes(t, c, total)
	for _, n := range dying {
		waitReady(t, c, n)
	}
	user := saUser(saNamespace, saName)
	started := time.Now()
	w := startWatcher(t, c, "s15", watchArgs(c, tokenFile, threshold)...)
	defer func() {
		if !w.stopped {
			w.stop(t)
		}
	}()
	poll(t, c, "the watcher's first list", 15*time.Second, func() bool {
		for _, r := range requests(t, c, user, started) {
			if r.Verb == "list" && r.resource() == "nodes" {
				return true
			}
		}
		return false
	})
	time.Sleep(2 * time.Second)
	for i, n := range dying {
		if i > 0 {
			time.Sleep(7 * time.Second)
		}
		k.stop(n)
	}
	ltt := map[string]time.Time{}
	for _, n := range dying {
		ltt[n] = waitUnknown(t, c, n)
	}
	for _, n := range dying {
		waitTainted(t, c, n, time.Until(ltt[n].Add(threshold*time.Second))+watchPoll*time.Second+10*time.Second)
	}
	w.stop(t)
	var worst time.Duration
	var lines []string
	for _, n := range dying {
		late := firstPatch(t, c, user, n, started).Sub(ltt[n].Add(threshold * time.Second))
		worst = max(worst, late)
		lines = append(lines, fmt.Sprintf("%s %s", n, fmtSeconds(late)))
		if late < 0 {
			t.Errorf("%s tainted %s before its threshold", n, fmtSeconds(-late))
		}
		if late > watchBoundOf(c) {
			t.Errorf("%s tainted %s after its threshold (Unknown at %s + %ds, API server's clock), more than %s: not acting on the event",
				n, fmtSeconds(late), ltt[n].UTC().Format(time.RFC3339), threshold, watchBoundOf(c))
		}
	}
	requireWatch(t, c, user, started, "scenario 15")
	measure(t, "scenario 15: %d nodes dying 7 s apart, --poll %d --taint-after %d: tainted after their threshold by %s (worst %s; bound %s)",
		len(dying), watchPoll, threshold, strings.Join(lines, ", "), fmtSeconds(worst), watchBoundOf(c))
}

// scenario 18: a dying node whose labels change every 50 ms, beside a dying node left alone.
func scenarioWatchChurn(t *testing.T, c *cluster, tokenFile string) {
	ctx := context.Background()
	k := newKubelets(c.cs)
	defer k.removeAll(ctx)
	const threshold, busy, plain = 5, "s18-busy", "s18-plain"
	const bound = 3 * time.Second
	for _, n := range []string{busy, plain, "s18-alive-1", "s18-alive-2", "s18-alive-3"} {
		if _, err := k.add(ctx, nodeSpec{name: n, alive: true}); err != nil {
			t.Fatal(err)
		}
	}
	onlyNodes(t, c, 5)
	waitReady(t, c, busy)
	waitReady(t, c, plain)
	user := saUser(saNamespace, saName)
	started := time.Now()
	w := startWatcher(t, c, "s18", watchArgs(c, tokenFile, threshold)...)
	defer func() {
		if !w.stopped {
			w.stop(t)
		}
	}()
	stopChurn := churn(c, []string{busy})
	churning := true
	defer func() {
		if churning {
			stopChurn()
		}
	}()
	time.Sleep(3 * time.Second)
	k.stop(busy)
	time.Sleep(3 * time.Second)
	k.stop(plain)
	lttBusy, lttPlain := waitUnknown(t, c, busy), waitUnknown(t, c, plain)
	waitTainted(t, c, busy, time.Until(lttBusy.Add(threshold*time.Second))+watchPoll*time.Second+10*time.Second)
	waitTainted(t, c, plain, time.Until(lttPlain.Add(threshold*time.Second))+watchPoll*time.Second+10*time.Second)
	lateBusy := firstPatch(t, c, user, busy, started).Sub(lttBusy.Add(threshold * time.Second))
	latePlain := firstPatch(t, c, user, plain, started).Sub(lttPlain.Add(threshold * time.Second))
	for n, late := range map[string]time.Duration{busy: lateBusy, plain: latePlain} {
		if late < 0 || late > bound {
			t.Errorf("%s tainted %s after its threshold, want 0 to %s (labels of %s changing every %s)", n, fmtSeconds(late), bound, busy, churnEvery)
		}
	}
	nd := getNode(t, c, busy)
	if _, ok := nd.Annotations[ourAnno]; !ok || len(oosTaints(nd)) != 1 {
		t.Errorf("%s: taints %v, annotation present %v: want exactly our taint with its annotation", busy, nd.Spec.Taints, ok)
	}
	if nd.Labels["e2e.example.com/churn"] == "" {
		t.Errorf("%s lost the churned label", busy)
	}

	// Back, while the labels still change: cleared at once.
	clearFrom := time.Now()
	k.resume(busy)
	readyAt := readyTransition(t, c, busy, corev1.ConditionTrue, 30*time.Second)
	waitCleared(t, c, busy, watchPoll*time.Second+10*time.Second)
	clearLate := firstPatch(t, c, user, busy, clearFrom).Sub(readyAt)
	if clearLate > bound {
		t.Errorf("%s cleared %s after Ready (labels changing every %s), more than %s", busy, fmtSeconds(clearLate), churnEvery, bound)
	}
	changes := stopChurn()
	churning = false
	w.stop(t)
	requireWatch(t, c, user, started, "scenario 18")
	refused := 0
	for _, r := range requests(t, c, user, started) {
		if r.Verb == "patch" && r.ObjectRef != nil && r.ObjectRef.Name == busy && (r.code() == 409 || r.code() == 422) {
			refused++
		}
	}
	measure(t, "scenario 18: labels of %s changed every %s (%d changes): tainted %s after its threshold, cleared %s after Ready (%d patches refused as changed); the quiet dying node tainted %s after its threshold",
		busy, churnEvery, changes, fmtSeconds(lateBusy), fmtSeconds(clearLate), refused, fmtSeconds(latePlain))
}

// quietSpell is how long scenario 19 watches a cluster where nothing changes.
func quietSpell(t *testing.T) time.Duration {
	s := os.Getenv("NODERECOVER_E2E_QUIET_WATCH")
	if s == "" {
		return 2 * time.Minute
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 10*time.Second {
		t.Fatalf("NODERECOVER_E2E_QUIET_WATCH=%q: want a Go duration of 10s or more", s)
	}
	return d
}

// scenario 19: two replicas, a quiet watch, the leader keeps its Lease all along.
func scenarioWatchLease(t *testing.T, c *cluster) {
	ctx := context.Background()
	k := newKubelets(c.cs)
	defer k.removeAll(ctx)
	const threshold, dies = 5, "s19-dies"
	const lease = "s19-lease"
	for _, n := range []string{dies, "s19-alive-1", "s19-alive-2", "s19-alive-3"} {
		if _, err := k.add(ctx, nodeSpec{name: n, alive: true, quiet: true}); err != nil {
			t.Fatal(err)
		}
	}
	onlyNodes(t, c, 4)
	waitReady(t, c, dies)
	args := func(tok string) []string {
		return runArgs(c, tok, "--self-node", "e2e-runner", "--taint-after", strconv.Itoa(threshold),
			"--poll", strconv.Itoa(watchPoll), "--events=false", "--leader-elect", "--lease-namespace", saNamespace, "--lease-name", lease)
	}
	tokA, tokB := leaseReplica(t, c, "s19-replica-a"), leaseReplica(t, c, "s19-replica-b")
	userA, userB := saUser(saNamespace, "s19-replica-a"), saUser(saNamespace, "s19-replica-b")
	t.Setenv("POD_NAME", "s19-a")
	a := startWatcher(t, c, "s19-a", args(tokA)...)
	a.waitLog(t, 0, "Leading: ", 20*time.Second)
	t.Setenv("POD_NAME", "s19-b")
	b := startWatcher(t, c, "s19-b", args(tokB)...)
	defer func() {
		for _, w := range []*watcher{a, b} {
			if !w.stopped {
				w.stop(t)
			}
		}
	}()
	b.waitLog(t, 0, "Following: ", 20*time.Second)
	getLease := func() (string, int32, time.Time) {
		l, err := c.cs.CoordinationV1().Leases(saNamespace).Get(ctx, lease, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("reading lease: %v", err)
		}
		var h string
		var tr int32
		var rt time.Time
		if l.Spec.HolderIdentity != nil {
			h = *l.Spec.HolderIdentity
		}
		if l.Spec.LeaseTransitions != nil {
			tr = *l.Spec.LeaseTransitions
		}
		if l.Spec.RenewTime != nil {
			rt = l.Spec.RenewTime.Time
		}
		return h, tr, rt
	}
	holder, transitions, _ := getLease()
	if !strings.HasPrefix(holder, "s19-a-") {
		t.Fatalf("lease held by %q, want replica a", holder)
	}
	// Settle: the first list and watch, the nodes' last writes; then nothing changes.
	time.Sleep(5 * time.Second)
	spell := quietSpell(t)
	from := time.Now()
	end := from.Add(spell)
	samples := 0
	for time.Now().Before(end) {
		h, tr, _ := getLease()
		if h != holder || tr != transitions {
			t.Fatalf("after %s of a quiet watch the lease went from %q (transitions %d) to %q (%d)",
				fmtSeconds(time.Since(from)), holder, transitions, h, tr)
		}
		if a.exited() || b.exited() {
			t.Fatalf("a replica exited during the quiet watch")
		}
		samples++
		time.Sleep(time.Second)
	}
	// By the audit log: the leader renewed all along; the standby wrote no lease and read no node.
	var renewals []time.Time
	for _, r := range requests(t, c, userA, from) {
		if r.Verb == "update" && r.resource() == "leases" && r.code() == 200 && r.StageTimestamp.Before(end) {
			renewals = append(renewals, r.StageTimestamp)
		}
	}
	gap := time.Duration(0)
	prev := from
	for _, at := range append(renewals, end) {
		gap = max(gap, at.Sub(prev))
		prev = at
	}
	if gap > 10*time.Second {
		t.Errorf("audit: the leader went %s without renewing its lease during the quiet watch (renew deadline 10s; %d renewals in %s)",
			fmtSeconds(gap), len(renewals), spell)
	}
	for _, r := range requests(t, c, userB, from) {
		if r.RequestReceivedTimestamp.After(end) {
			continue
		}
		if r.resource() == "leases" && r.Verb != "get" {
			t.Errorf("audit: the standby sent %s %s during the quiet watch (answered %d)", r.Verb, r.RequestURI, r.code())
		}
		if r.resource() == "nodes" {
			t.Errorf("audit: the standby sent %s %s: a standby neither lists nor watches", r.Verb, r.RequestURI)
		}
	}
	leaderLists, openWatch := 0, false
	for _, r := range requests(t, c, userA, from.Add(-time.Minute)) {
		if r.resource() != "nodes" {
			continue
		}
		if r.Verb == "list" && r.RequestReceivedTimestamp.After(from) && r.RequestReceivedTimestamp.Before(end) {
			leaderLists++
		}
		if r.Verb == "watch" && r.code() == 200 && r.RequestReceivedTimestamp.Before(end) &&
			(r.Stage == "ResponseStarted" || r.StageTimestamp.After(from)) {
			openWatch = true
		}
	}
	if !openWatch {
		t.Errorf("audit: the leader had no watch of nodes open during the quiet watch")
	}
	if maxLists := int(spell/(8*time.Minute)) + 1; leaderLists > maxLists {
		t.Errorf("audit: the leader listed nodes %d times in a quiet %s (a relist at most every 8-10 minutes: at most %d)", leaderLists, spell, maxLists)
	}

	// The watch is alive after the quiet spell: a node dying now is tainted in time, by the leader.
	k.stop(dies)
	ltt := waitUnknown(t, c, dies)
	waitTainted(t, c, dies, time.Until(ltt.Add(threshold*time.Second))+watchPoll*time.Second+10*time.Second)
	late := firstPatch(t, c, userA, dies, end).Sub(ltt.Add(threshold * time.Second))
	if late < 0 || late > watchBoundOf(c) {
		t.Errorf("%s tainted %s after its threshold by the leader after a quiet watch of %s, want 0 to %s", dies, fmtSeconds(late), spell, watchBoundOf(c))
	}
	a.stop(t)
	b.stop(t)
	measure(t, "scenario 19: two replicas, a quiet watch of %s: the leader renewed %d times (longest gap %s, renew deadline 10s), lease never moved (%d samples), the standby read no node; %d relists; a node dying after it tainted %s after its threshold",
		spell, len(renewals), fmtSeconds(gap), samples, leaderLists, fmtSeconds(late))
}

// backAfter is the first request of user on nodes answered 200 after at: the watcher reading
// the restarted API server again.
func backAfter(t *testing.T, c *cluster, user string, at time.Time) (time.Time, bool) {
	t.Helper()
	for _, r := range requests(t, c, user, at) {
		if r.resource() == "nodes" && r.Verb == "list" && r.code() == 200 {
			return r.StageTimestamp, true
		}
		if r.resource() == "nodes" && r.Verb == "watch" && r.code() == 200 {
			return r.RequestReceivedTimestamp, true // the stream starts as it is answered
		}
	}
	return time.Time{}, false
}

// scenario 16: kube-apiserver restarted mid-watch. A node tainted before the restart comes back
// while it is down and must be cleared; a node that stops while it is down must be tainted;
// each within 2 s of the later of its due time and the watcher's first answered request after
// the restart, which must include a watch.
func scenarioWatchRestart(t *testing.T, c *cluster, tokenFile string) {
	ctx := context.Background()
	k := newKubelets(c.cs)
	defer k.removeAll(ctx)
	// 20 s: the watcher's backoff (0.8 s doubling, with jitter) may reach 12 s or so while the
	// API server restarts; the threshold leaves it room to be back before a node is due.
	const threshold, dies, returns = 20, "s16-dies", "s16-returns"
	if _, err := k.add(ctx, nodeSpec{name: returns}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{dies, "s16-alive-1", "s16-alive-2", "s16-alive-3"} {
		if _, err := k.add(ctx, nodeSpec{name: n, alive: true}); err != nil {
			t.Fatal(err)
		}
	}
	onlyNodes(t, c, 5)
	waitReady(t, c, dies)
	user := saUser(saNamespace, saName)
	started := time.Now()
	// The storm guard is off: every node may look Unknown for a moment after the restart (the
	// node lifecycle controller sees no lease renewal while the API server is down).
	w := startWatcher(t, c, "s16", watchArgs(c, tokenFile, threshold, "--max-unknown", "100%")...)
	defer func() {
		if !w.stopped {
			w.stop(t)
		}
	}()
	lttRet := waitUnknown(t, c, returns)
	waitTainted(t, c, returns, time.Until(lttRet.Add(threshold*time.Second))+watchPoll*time.Second+10*time.Second)
	time.Sleep(2 * time.Second)
	requireWatch(t, c, user, started, "scenario 16, before the restart") // restarted mid-watch

	down, up := restartAPIServer(t, c, func() {
		k.stop(dies)
		k.resume(returns) // its first status lands once the API server is back
	})
	t.Logf("kube-apiserver down at %s, ready again %s later", down.UTC().Format(time.RFC3339Nano), fmtSeconds(up.Sub(down)))

	readyRet := readyTransition(t, c, returns, corev1.ConditionTrue, 60*time.Second)
	lttDies := readyTransition(t, c, dies, corev1.ConditionUnknown, 60*time.Second)
	waitCleared(t, c, returns, watchPoll*time.Second+30*time.Second)
	waitTainted(t, c, dies, time.Until(lttDies.Add(threshold*time.Second))+watchPoll*time.Second+30*time.Second)
	w.stop(t)

	back, ok := backAfter(t, c, user, down)
	if !ok {
		t.Fatalf("audit: the watcher read no node after the restart")
	}
	requireWatch(t, c, user, down, "scenario 16, after the restart")
	// The backoff tops at 30 s (with jitter): a watcher that takes longer to read again is
	// not resuming, it is waiting for something else (a poll).
	if back.Sub(up) > 40*time.Second {
		t.Errorf("the watcher read nodes again %s after kube-apiserver was ready, more than 40 s (backoff at most 30 s)", fmtSeconds(back.Sub(up)))
	}
	cleared := firstPatch(t, c, user, returns, down)
	tainted := firstPatch(t, c, user, dies, down)
	clearLate := cleared.Sub(latest(readyRet, back))
	taintLate := tainted.Sub(latest(lttDies.Add(threshold*time.Second), back))
	if clearLate > watchBoundOf(c) {
		t.Errorf("%s cleared %s after the later of Ready (%s) and the watcher being back (%s), more than %s",
			returns, fmtSeconds(clearLate), readyRet.UTC().Format(time.RFC3339), back.UTC().Format(time.RFC3339Nano), watchBoundOf(c))
	}
	if tainted.Before(lttDies.Add(threshold * time.Second)) {
		t.Errorf("%s tainted before its threshold", dies)
	}
	if taintLate > watchBoundOf(c) {
		t.Errorf("%s (stopped while the API server was down) tainted %s after the later of its threshold and the watcher being back, more than %s",
			dies, fmtSeconds(taintLate), watchBoundOf(c))
	}
	measure(t, "scenario 16: kube-apiserver down %s; the watcher read again %s after it was ready; the node that returned cleared %s and the one that died tainted %s after the later of due and back (bound %s)",
		fmtSeconds(up.Sub(down)), fmtSeconds(back.Sub(up)), fmtSeconds(clearLate), fmtSeconds(taintLate), watchBoundOf(c))
}

// scenario 17: the watcher's resourceVersion compacted away while the API server is down. Its
// resumed watch is too old (410, an ERROR event in the stream or the answer); the next request
// must be a list, then a watch from a resourceVersion past the compaction; and a node dying
// after it is tainted in time.
func scenarioWatchCompaction(t *testing.T, c *cluster, tokenFile string) {
	ctx := context.Background()
	k := newKubelets(c.cs)
	defer k.removeAll(ctx)
	const threshold, dies = 10, "s17-dies"
	for _, n := range []string{dies, "s17-alive-1", "s17-alive-2", "s17-alive-3"} {
		if _, err := k.add(ctx, nodeSpec{name: n, alive: true}); err != nil {
			t.Fatal(err)
		}
	}
	onlyNodes(t, c, 4)
	waitReady(t, c, dies)
	user := saUser(saNamespace, saName)
	started := time.Now()
	w := startWatcher(t, c, "s17", watchArgs(c, tokenFile, threshold, "--max-unknown", "100%")...)
	defer func() {
		if !w.stopped {
			w.stop(t)
		}
	}()
	poll(t, c, "the watcher's watch open", 20*time.Second, func() bool {
		for _, r := range nodeWatches(requests(t, c, user, started)) {
			if r.code() == 200 {
				return true
			}
		}
		return false
	})
	time.Sleep(6 * time.Second) // a status write of every node: events on the stream
	var compacted int64
	bumpAndCompact := etcdBumpAndCompact
	if c.datastore == "kine" {
		bumpAndCompact = kineBumpAndCompact
	}
	down, up := restartAPIServer(t, c, func() { compacted = bumpAndCompact(t, c) })
	t.Logf("%s compacted at revision %d while kube-apiserver was down (%s)", c.datastore, compacted, fmtSeconds(up.Sub(down)))

	// Wait until the watcher is back and follows a watch past the compaction.
	var after []auditRecord
	poll(t, c, "a watch from past the compaction", 60*time.Second, func() bool {
		after = requests(t, c, user, down)
		for _, r := range nodeWatches(after) {
			if rv, _ := strconv.ParseInt(r.query("resourceVersion"), 10, 64); rv >= compacted && r.code() == 200 {
				return true
			}
		}
		return false
	})
	// The first watch answered after the restart asked for a compacted resourceVersion: the API
	// server said 410 (as an ERROR event, the watch itself answered 200, or as the answer).
	// The watcher's next request on nodes is a list; no compacted watch is answered after it.
	var nodesReqs []auditRecord
	for _, r := range after {
		if r.resource() == "nodes" && r.code() != 0 && r.code() != 429 && r.code() < 500 {
			nodesReqs = append(nodesReqs, r)
		}
	}
	first := -1
	for i, r := range nodesReqs {
		if r.Verb == "watch" {
			first = i
			break
		}
	}
	if first < 0 || first+1 >= len(nodesReqs) {
		t.Fatalf("audit: no watch, or nothing after it, by the watcher after the restart: %d requests", len(nodesReqs))
	}
	oldRV, _ := strconv.ParseInt(nodesReqs[first].query("resourceVersion"), 10, 64)
	if oldRV >= compacted {
		t.Fatalf("audit: the first watch after the restart asked for resourceVersion %d, not before the compaction (%d): the watcher did not resume from where it was",
			oldRV, compacted)
	}
	// A kube-apiserver still starting may answer a watch and close it before its 410 (the
	// watcher then resumes from the same resourceVersion, as it should after a cut stream), so
	// what is checked is what follows the last watch from a compacted resourceVersion: a list,
	// and never a compacted watch again.
	stale, lastStale := 0, -1
	for i, r := range nodesReqs {
		if r.Verb != "watch" {
			continue
		}
		if rv, _ := strconv.ParseInt(r.query("resourceVersion"), 10, 64); rv < compacted {
			stale++
			lastStale = i
		}
	}
	if lastStale+1 >= len(nodesReqs) {
		t.Fatalf("audit: nothing after the last too-old watch: no relist")
	}
	if next := nodesReqs[lastStale+1]; next.Verb != "list" || next.query("continue") != "" {
		t.Errorf("audit: after the too-old watch (resourceVersion %d, compacted at %d) the watcher sent %s %s, not a list (a relist)",
			oldRV, compacted, next.Verb, next.RequestURI)
	}
	if stale < 1 || stale > 3 {
		t.Errorf("audit: %d watches answered from a compacted resourceVersion, want 1 (or a few more cut by the restarting server), then a relist", stale)
	}
	if !regexp.MustCompile(`(?i)410|expired|too old`).MatchString(w.log()) {
		t.Errorf("the watcher's log does not say the watch expired (410)")
	}

	// Following again: a node dying now is tainted in time.
	k.stop(dies)
	ltt := waitUnknown(t, c, dies)
	waitTainted(t, c, dies, time.Until(ltt.Add(threshold*time.Second))+watchPoll*time.Second+10*time.Second)
	late := firstPatch(t, c, user, dies, down).Sub(ltt.Add(threshold * time.Second))
	if late < 0 || late > watchBoundOf(c) {
		t.Errorf("%s tainted %s after its threshold after the relist, want 0 to %s", dies, fmtSeconds(late), watchBoundOf(c))
	}
	w.stop(t)
	measure(t, "scenario 17: %s compacted at %d while kube-apiserver was down: the watch from %d was too old, the next request a list (%d stale watch); a node dying after the relist tainted %s after its threshold",
		c.datastore, compacted, oldRV, stale, fmtSeconds(late))
}
