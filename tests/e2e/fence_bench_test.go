package e2e

// TestBenchFenceAgents: what the fence agents cost the real kube-apiserver (issue 23's "measure
// the API server's cost at 1000 nodes and put it in BENCHMARKS.md"). A benchmark, not a test:
// it runs only with NODERECOVER_E2E_BENCH=1 and NODERECOVER_E2E_RUN selecting it, prints a
// Markdown table and writes it to NODERECOVER_E2E_BENCH_OUT; it fails only when it cannot
// measure (an agent that exits or never arms), never on a number.
//
// It runs NODERECOVER_E2E_BENCH_AGENTS (1000) real `noderecover fence` processes, one per
// simulated node, each with its defaults but the action (exec, never run: they all reach the
// API server) and the kubelet check (off: there is no kubelet), through a loopback relay that
// counts the bytes. For each run it measures kube-apiserver's and etcd's CPU (utime + stime from
// /proc/PID/stat), the agents' own CPU (all of them) and their requests as the audit log counts
// them, in two windows: the rollout (the agents' first 5 minutes, when each lists its peers
// every 30 s) and then NODERECOVER_E2E_BENCH_WINDOW (3m) of steady state. First a window with
// no agent: the floor. The runs: this binary with each --fence-check of
// NODERECOVER_E2E_BENCH_FENCE_CHECKS ("5s 2s"), then, when NODERECOVER_E2E_BENCH_FENCE_BEFORE
// names another build, that build with --fence-check 2s (the build before issue 23's
// measurement read its Lease from etcd every 2 s).
//
// The e2e API server writes an audit record of every Lease request (Metadata level, blocking):
// a cost per request that a cluster without such a policy does not pay, so the figures are
// an upper bound of the API server's share.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const fenceBenchNS = "fence-bench"

type fenceBenchRow struct {
	run, window                 string
	dur                         time.Duration
	apiCPU, etcdCPU, agentsCPU  float64
	down, up                    int64
	gets, updates, lists, other int
}

// fenceBenchAgents starts n agents of bin with --fence-check check; they are stopped by the
// returned function (SIGTERM: each deletes its Lease), which waits for them.
func fenceBenchAgents(t *testing.T, c *cluster, bin, server, token, secret, check string, n int) ([]*exec.Cmd, func()) {
	t.Helper()
	dir := filepath.Join(c.dir, "fence-bench")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmds := make([]*exec.Cmd, 0, n)
	for i := 0; i < n; i++ {
		port, err := agentPort()
		if err != nil {
			t.Fatal(err)
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		log, err := os.Create(filepath.Join(dir, fmt.Sprintf("agent-%04d.log", i)))
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "fence", "--server", server, "--ca-file", c.caFile, "--token-file", token,
			"--self-node", fmt.Sprintf("bench-%04d", i), "--fence-namespace", fenceBenchNS, "--fence-check", check,
			"--fence-action", "exec", "--fence-exec", "/bin/false", "--fence-kubelet-url", "",
			"--fence-listen", addr, "--fence-address", addr, "--fence-peer-secret-file", secret)
		cmd.Stdout, cmd.Stderr = log, log
		cmd.Env = cleanEnv()
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatalf("starting agent %d: %v", i, err)
		}
		log.Close()
		cmds = append(cmds, cmd)
		// a DaemonSet's pods start over some seconds, not in one instant: 25 a second (faster,
		// the 2-core machine's API server, loaded by 1000 new agents' TLS handshakes, ran past
		// their 2 s deadlines)
		if i%5 == 4 {
			time.Sleep(200 * time.Millisecond)
		}
	}
	stop := func() {
		var wg sync.WaitGroup
		for _, cmd := range cmds {
			cmd.Process.Signal(syscall.SIGTERM)
			wg.Add(1)
			go func(cmd *exec.Cmd) {
				defer wg.Done()
				done := make(chan struct{})
				go func() { cmd.Wait(); close(done) }()
				select {
				case <-done:
				case <-time.After(20 * time.Second):
					cmd.Process.Kill()
					<-done
				}
			}(cmd)
		}
		wg.Wait()
	}
	return cmds, stop
}

// fenceBenchArmed waits until n agents are armed (their Leases written), at most timeout: how
// many are. Fewer is measured and reported, not a failure: an agent that cannot reach the API
// server fences (its exec action, /bin/false) and the others carry on.
func fenceBenchArmed(t *testing.T, c *cluster, n int, timeout time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		l, err := c.cs.CoordinationV1().Leases(fenceBenchNS).List(context.Background(),
			metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=fence-agent"})
		got := 0
		if err == nil {
			got = len(l.Items)
		}
		if got >= n || time.Now().After(deadline) {
			if got < n {
				t.Logf("%d of %d agents armed after %s (err %v); their logs: %s", got, n, timeout, err,
					filepath.Join(c.dir, "fence-bench"))
			}
			return got
		}
		time.Sleep(2 * time.Second)
	}
}

func TestBenchFenceAgents(t *testing.T) {
	if os.Getenv("NODERECOVER_E2E_BENCH") != "1" {
		t.Skip("a benchmark: NODERECOVER_E2E_BENCH=1")
	}
	c := getCluster(t)
	bin := noderecoverBin(t)
	ctx := context.Background()
	agents := benchInt(t, "NODERECOVER_E2E_BENCH_AGENTS", 1000)
	window := benchDuration(t, "NODERECOVER_E2E_BENCH_WINDOW", 3*time.Minute)
	checks := strings.Fields(os.Getenv("NODERECOVER_E2E_BENCH_FENCE_CHECKS"))
	if len(checks) == 0 {
		checks = []string{"5s", "2s"}
	}
	type run struct{ name, bin, check string }
	var runs []run
	for _, ch := range checks {
		runs = append(runs, run{"this build, --fence-check " + ch, bin, ch})
	}
	if before := os.Getenv("NODERECOVER_E2E_BENCH_FENCE_BEFORE"); before != "" {
		runs = append(runs, run{"the build before, --fence-check 2s", before, "2s"})
	}

	fenceRBAC(t, c)
	if _, err := c.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fenceBenchNS}},
		metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := c.cs.CoreV1().ServiceAccounts(fenceBenchNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "agent"}},
		metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "e2e-fence-agent", Namespace: fenceBenchNS},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "e2e-fence-agent"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "agent", Namespace: fenceBenchNS}}}
	if _, err := c.cs.RbacV1().RoleBindings(fenceBenchNS).Create(ctx, rb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	token, _ := saToken(t, c, fenceBenchNS, "agent")
	secret := writeSecret(t, c.dir, "bench")
	user := saUser(fenceBenchNS, "agent")
	rl := startRelay(t, strings.TrimPrefix(c.server, "https://"))
	apiPID, etcdPID := procPID(t, c, "kube-apiserver"), procPID(t, c, c.datastore)

	var rows []fenceBenchRow
	measure := func(runName, windowName string, cmds []*exec.Cmd, from time.Time, d time.Duration) {
		if wait := time.Until(from); wait > 0 {
			time.Sleep(wait)
		}
		agentsCPU := func() int64 {
			var sum int64
			for _, cmd := range cmds {
				sum += cpuTicks(t, cmd.Process.Pid)
			}
			return sum
		}
		start := time.Now()
		a0, e0, g0, d0, u0 := cpuTicks(t, apiPID), cpuTicks(t, etcdPID), agentsCPU(), rl.down.Load(), rl.up.Load()
		time.Sleep(d)
		row := fenceBenchRow{run: runName, window: windowName, dur: time.Since(start),
			apiCPU: float64(cpuTicks(t, apiPID)-a0) / 100, etcdCPU: float64(cpuTicks(t, etcdPID)-e0) / 100,
			agentsCPU: float64(agentsCPU()-g0) / 100, down: rl.down.Load() - d0, up: rl.up.Load() - u0}
		end := start.Add(row.dur)
		if len(cmds) > 0 {
			for _, r := range requests(t, c, user, start) {
				if r.resource() != "leases" || !r.RequestReceivedTimestamp.Before(end) {
					continue
				}
				switch r.Verb {
				case "get":
					row.gets++
				case "update":
					row.updates++
				case "list":
					row.lists++
				default:
					row.other++
				}
			}
		}
		t.Logf("%s, %s: kube-apiserver %.2f s CPU, %s %.2f s, agents %.2f s, %d bytes to the agents in %s; requests: %d get, %d update, %d list, %d other",
			runName, windowName, row.apiCPU, c.datastore, row.etcdCPU, row.agentsCPU, row.down, fmtSeconds(row.dur),
			row.gets, row.updates, row.lists, row.other)
		rows = append(rows, row)
	}

	measure("no agent (the floor)", "-", nil, time.Now(), window)
	for _, r := range runs {
		began := time.Now()
		cmds, stop := fenceBenchAgents(t, c, r.bin, rl.url(), token, secret, r.check, agents)
		armed := fenceBenchArmed(t, c, agents, 3*time.Minute)
		t.Logf("%s: %d agents armed %s after the first started", r.name, armed, fmtSeconds(time.Since(began)))
		if armed*10 < agents*9 {
			t.Fatalf("%s: fewer than 90%% of the agents armed: nothing worth measuring", r.name)
		}
		r.name = fmt.Sprintf("%s (%d armed)", r.name, armed)
		// the rollout: from all armed to the end of the first agent's first 5 minutes (FENCE_NEW)
		measure(r.name, "rollout (to 5 min)", cmds, began, time.Until(began.Add(5*time.Minute)))
		measure(r.name, "steady", cmds, began.Add(5*time.Minute+20*time.Second), window)
		for i, cmd := range cmds {
			if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid)); err != nil ||
				strings.HasPrefix(string(b[strings.LastIndexByte(string(b), ')')+2:]), "Z") {
				t.Fatalf("%s: agent %d exited during the windows; its log: %s", r.name, i,
					filepath.Join(c.dir, "fence-bench", fmt.Sprintf("agent-%04d.log", i)))
			}
		}
		stop()
		time.Sleep(30 * time.Second)
	}

	report := fenceBenchReport(c, agents, rows)
	fmt.Print(report)
	if out := os.Getenv("NODERECOVER_E2E_BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(report), 0o644); err != nil {
			t.Error(err)
		}
	}
}

func fenceBenchReport(c *cluster, agents int, rows []fenceBenchRow) string {
	var b strings.Builder
	perHour := func(x float64, d time.Duration) float64 { return x * float64(time.Hour) / float64(d) }
	perSec := func(n int, d time.Duration) float64 { return float64(n) / d.Seconds() }
	fmt.Fprintf(&b, "kube-apiserver %s, %s; %d fence agents (each its own process and connection); CPU from /proc/PID/stat and bytes through a loopback relay (TLS included), extrapolated to an hour; requests as the audit log counts them.\n\n",
		c.serverVersion, c.store(), agents)
	fmt.Fprintf(&b, "| agents | window | kube-apiserver CPU s/h (%% of a core) | less the floor | %s CPU s/h | less the floor | agents' CPU s/h (all) | bytes to the agents /h | GET/s | PUT/s | lists/s |\n", c.datastore)
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	var floorAPI, floorEtcd float64
	for i, r := range rows {
		api, etcd := perHour(r.apiCPU, r.dur), perHour(r.etcdCPU, r.dur)
		lessAPI, lessEtcd := "-", "-"
		if i == 0 {
			floorAPI, floorEtcd = api, etcd
		} else {
			lessAPI = fmt.Sprintf("%.1f (%.2f%%)", api-floorAPI, (api-floorAPI)/36)
			lessEtcd = fmt.Sprintf("%.1f", etcd-floorEtcd)
		}
		fmt.Fprintf(&b, "| %s | %s | %.1f (%.2f%%) | %s | %.1f | %s | %.1f | %s | %.1f | %.2f | %.2f |\n", r.run, r.window, api, api/36,
			lessAPI, etcd, lessEtcd, perHour(r.agentsCPU, r.dur), fmtBytes(perHour(float64(r.down), r.dur)),
			perSec(r.gets, r.dur), perSec(r.updates, r.dur), perSec(r.lists, r.dur))
	}
	return b.String()
}
