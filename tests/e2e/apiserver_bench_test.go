package e2e

// TestBenchAPIServer: what noderecover costs the real kube-apiserver (issue 15's "Measured, in
// BENCHMARKS.md"), polling every 15 s against following a watch, side by side in one run. A
// benchmark, not a test: it runs only with NODERECOVER_E2E_BENCH=1 (bench/run.sh sets it with
// BENCH_APISERVER=1), prints a Markdown table and writes it to NODERECOVER_E2E_BENCH_OUT; it
// fails only when it cannot measure (the cluster, a node, the binary), never on a number.
//
// On the e2e control plane, with kube-controller-manager stopped (nothing else writes a node),
// it registers NODERECOVER_E2E_BENCH_NODES (1000) k3s-shaped nodes (12 labels, 12 annotations,
// 4 conditions, 25 images of two names: the shape bench/standin/nodes.go serves) and measures,
// for each window of NODERECOVER_E2E_BENCH_WINDOW (3m), kube-apiserver's and etcd's (kine's with
// NODERECOVER_E2E_DATASTORE=kine) CPU (utime + stime from /proc/PID/stat) and the bytes between
// noderecover and the API server (a TCP relay on loopback counts them, TLS records included), in
// this order:
//
//	idle:    no noderecover (the floor), `run --poll 15` polling, `run` watching;
//	changes: the same three while every node's status is written once per 5 minutes (N/300 a
//	         second, spread evenly, as kubelets report when nothing changes);
//	rolling: the same status writes, and a node dying every 6 s (its Ready turned Unknown, its
//	         status writes stopped) for NODERECOVER_E2E_BENCH_ROLLING (5m), with --taint-after
//	         10: what each new taint costs (a list each, or the store's revision from 500 nodes on),
//	         polling against watching; each window's nodes are its own.
//
// NODERECOVER_E2E_BENCH_LOADS picks loads (default "idle changes rolling").
//
// noderecover's share is each window less the floor of its kind. The watching rows run only for
// a binary that knows --watch. It never measures noderecover's first list (each window starts
// 20 s after the watcher) and never changes a node noderecover would act on (all stay Ready).

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// relay is a TCP relay from a loopback port to the API server that counts the bytes each way.
type relay struct {
	ln       net.Listener
	down, up atomic.Int64 // server to client, client to server
	conns    atomic.Int64
}

func startRelay(t *testing.T, target string) *relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{ln: ln}
	go func() {
		for {
			cc, err := ln.Accept()
			if err != nil {
				return
			}
			r.conns.Add(1)
			go func() {
				sc, err := net.Dial("tcp", target)
				if err != nil {
					cc.Close()
					return
				}
				go func() { pipe(cc, sc, &r.up); sc.Close() }()
				pipe(sc, cc, &r.down)
				cc.Close()
				sc.Close()
			}()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return r
}

// pipe copies from to to, counting each read into n as it passes (not when the connection ends).
func pipe(from, to net.Conn, n *atomic.Int64) {
	buf := make([]byte, 64*1024)
	for {
		k, err := from.Read(buf)
		if k > 0 {
			n.Add(int64(k))
			if _, werr := to.Write(buf[:k]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (r *relay) url() string { return "https://" + r.ln.Addr().String() }

// cpuTicks is utime + stime of pid in clock ticks (100 a second on Linux).
func cpuTicks(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatalf("cpu of %d: %v", pid, err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	u, _ := strconv.ParseInt(f[11], 10, 64) // field 14 of stat, counted from field 3
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return u + st
}

func procPID(t *testing.T, c *cluster, name string) int {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.procs {
		if p.name == name && !p.exited() {
			return p.cmd.Process.Pid
		}
	}
	t.Fatalf("no running %s", name)
	return 0
}

// stopProc stops a component for good and forgets it (alive() must not count it as dead).
func stopProc(t *testing.T, c *cluster, name string) {
	t.Helper()
	c.mu.Lock()
	var keep []*proc
	var stop *proc
	for _, p := range c.procs {
		if p.name == name {
			stop = p
		} else {
			keep = append(keep, p)
		}
	}
	c.procs = keep
	c.mu.Unlock()
	if stop == nil {
		t.Fatalf("no %s to stop", name)
	}
	stop.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-stop.done:
	case <-time.After(15 * time.Second):
		stop.cmd.Process.Kill()
		<-stop.done
	}
}

var benchImages = []string{
	"docker.io/rancher/mirrored-pause:3.6", "docker.io/rancher/mirrored-coredns-coredns:1.11.3",
	"docker.io/rancher/local-path-provisioner:v0.0.30", "docker.io/rancher/mirrored-metrics-server:v0.7.2",
	"docker.io/rancher/klipper-helm:v0.9.3", "docker.io/rancher/klipper-lb:v0.4.9", "docker.io/library/traefik:2.11",
	"docker.io/library/busybox:1.36", "ghcr.io/actions/actions-runner:2.321.0", "ghcr.io/actions/dind:27.3",
	"quay.io/prometheus/node-exporter:v1.8.2", "quay.io/prometheus/pushgateway:v1.10", "registry.k8s.io/pause:3.10",
	"docker.io/grafana/promtail:3.0.0", "docker.io/library/postgres:16.4", "docker.io/library/redis:7.4.1",
	"docker.io/library/nginx:1.27.2", "docker.io/library/golang:1.23", "docker.io/library/node:22.11",
	"docker.io/library/python:3.12", "docker.io/moby/buildkit:v0.17.2", "quay.io/jetstack/cert-manager:v1.16",
	"docker.io/library/alpine:3.20", "docker.io/library/debian:12.8", "docker.io/bitnami/kubectl:1.31",
}

func hexish(n int, seed string) string {
	const digits = "0123456789abcdef"
	var b strings.Builder
	h := uint64(1469598103934665603)
	for _, ch := range seed {
		h = (h ^ uint64(ch)) * 1099511628211
	}
	for i := 0; i < n; i++ {
		h ^= h << 13
		h ^= h >> 7
		h ^= h << 17
		b.WriteByte(digits[h%16])
	}
	return b.String()
}

// k3sNode registers node i shaped like a k3s agent (as bench/standin/nodes.go), Ready.
func k3sNode(ctx context.Context, c *cluster, i int) error {
	name := fmt.Sprintf("k3s-agent-%05d", i)
	ip := fmt.Sprintf("10.%d.%d.%d", 20+i/65536, (i/256)%256, i%256)
	podCIDR := fmt.Sprintf("10.42.%d.0/24", i%256)
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{
				"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/instance-type": "k3s", "beta.kubernetes.io/os": "linux",
				"kubernetes.io/arch": "amd64", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
				"node.kubernetes.io/instance-type": "k3s", "topology.kubernetes.io/region": "eu-central",
				"topology.kubernetes.io/zone": fmt.Sprintf("eu-central-%d", 1+i%3), "github-runner.exadev.io/removable": "true",
				"github-runner.exadev.io/pool": fmt.Sprintf("pool-%02d", i%16), "node.exadev.io/rack": fmt.Sprintf("r%03d", i/40),
			},
			Annotations: map[string]string{
				"alpha.kubernetes.io/provided-node-ip":                   ip,
				"flannel.alpha.coreos.com/backend-data":                  `{"VNI":1,"VtepMAC":"` + hexish(12, "mac"+name) + `"}`,
				"flannel.alpha.coreos.com/backend-type":                  "vxlan",
				"flannel.alpha.coreos.com/kube-subnet-manager":           "true",
				"flannel.alpha.coreos.com/public-ip":                     ip,
				"k3s.io/hostname":                                        name,
				"k3s.io/internal-ip":                                     ip,
				"k3s.io/node-args":                                       fmt.Sprintf(`["agent","--node-label","github-runner.exadev.io/pool=pool-%02d","--server","https://10.0.0.10:6443","--token","********"]`, i%16),
				"k3s.io/node-config-hash":                                hexish(52, "cfg"+name),
				"k3s.io/node-env":                                        `{"K3S_DATA_DIR":"/var/lib/rancher/k3s/data/` + hexish(64, "data") + `","K3S_TOKEN":"********","K3S_URL":"https://10.0.0.10:6443"}`,
				"node.alpha.kubernetes.io/ttl":                           "0",
				"volumes.kubernetes.io/controller-managed-attach-detach": "true",
			}},
		Spec: corev1.NodeSpec{PodCIDR: podCIDR, PodCIDRs: []string{podCIDR}, ProviderID: "k3s://" + name},
	}
	created, err := c.cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{FieldManager: "k3s"})
	if err != nil {
		return err
	}
	now := metav1.Now()
	cond := func(typ, status, reason, msg string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: corev1.NodeConditionType(typ), Status: corev1.ConditionStatus(status),
			LastHeartbeatTime: now, LastTransitionTime: now, Reason: reason, Message: msg}
	}
	rl := func(kv ...string) corev1.ResourceList {
		out := corev1.ResourceList{}
		for k := 0; k < len(kv); k += 2 {
			out[corev1.ResourceName(kv[k])] = resource.MustParse(kv[k+1])
		}
		return out
	}
	var imgs []corev1.ContainerImage
	for k, r := range benchImages {
		repo := r[:strings.LastIndexByte(r, ':')]
		imgs = append(imgs, corev1.ContainerImage{Names: []string{repo + "@sha256:" + hexish(64, r), r}, SizeBytes: int64(300000 + (k*7919%500)*104729)})
	}
	created.Status = corev1.NodeStatus{
		Capacity:    rl("cpu", "8", "ephemeral-storage", "153707984Ki", "hugepages-1Gi", "0", "hugepages-2Mi", "0", "memory", "32863156Ki", "pods", "110"),
		Allocatable: rl("cpu", "8", "ephemeral-storage", "149527126718", "hugepages-1Gi", "0", "hugepages-2Mi", "0", "memory", "32863156Ki", "pods", "110"),
		Conditions: []corev1.NodeCondition{
			cond("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
			cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
			cond("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
			cond("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
		},
		Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}, {Type: corev1.NodeHostName, Address: name}},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
		NodeInfo: corev1.NodeSystemInfo{MachineID: hexish(32, "machine"+name), SystemUUID: hexish(32, "sys"+name), BootID: hexish(32, "boot"+name),
			KernelVersion: "6.1.0-27-amd64", OSImage: "Debian GNU/Linux 12 (bookworm)", ContainerRuntimeVersion: "containerd://1.7.22-k3s1",
			KubeletVersion: "v1.31.2+k3s1", KubeProxyVersion: "v1.31.2+k3s1", OperatingSystem: "linux", Architecture: "amd64"},
		Images: imgs,
	}
	_, err = c.cs.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{FieldManager: "k3s"})
	return err
}

// heartbeats writes each node's Ready heartbeat time once per period, spread evenly, until ctx
// ends; returns the count of writes.
func heartbeats(ctx context.Context, c *cluster, n int, period time.Duration, dead []atomic.Bool) *atomic.Int64 {
	var done atomic.Int64
	go func() {
		tick := time.NewTicker(period / time.Duration(n))
		defer tick.Stop()
		for i := 0; ; i = (i + 1) % n {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if dead != nil && dead[i].Load() {
				continue
			}
			patch := fmt.Sprintf(`{"status":{"conditions":[{"type":"Ready","status":"True","lastHeartbeatTime":%q}]}}`,
				time.Now().UTC().Format(time.RFC3339))
			if _, err := c.cs.CoreV1().Nodes().Patch(ctx, fmt.Sprintf("k3s-agent-%05d", i), types.StrategicMergePatchType,
				[]byte(patch), metav1.PatchOptions{FieldManager: "k3s"}, "status"); err == nil {
				done.Add(1)
			}
		}
	}()
	return &done
}

type benchRow struct {
	load, what          string
	window              time.Duration
	apiCPU, etcdCPU, nr float64 // seconds of CPU in the window (etcdCPU: the datastore's, etcd or kine)
	down, up            int64   // bytes relayed
	lists, watches      int
	died, tainted       int // rolling: nodes that died in the window, and those tainted by its end
}

// dying turns one node Unknown every `every` from first on, as the node lifecycle controller
// would once its kubelet stopped (its status writes stop too), until ctx ends; it returns how
// many died and, read at the end, how many of those carry the out-of-service taint.
func dying(ctx context.Context, c *cluster, first int, every time.Duration, dead []atomic.Bool) func() (int, int) {
	var died atomic.Int64
	go func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for i := first; i < len(dead); i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			dead[i].Store(true)
			now := time.Now().UTC().Format(time.RFC3339)
			patch := fmt.Sprintf(`{"status":{"conditions":[{"type":"Ready","status":"Unknown","reason":"NodeStatusUnknown","lastHeartbeatTime":%q,"lastTransitionTime":%q}]}}`, now, now)
			if _, err := c.cs.CoreV1().Nodes().Patch(ctx, fmt.Sprintf("k3s-agent-%05d", i), types.StrategicMergePatchType,
				[]byte(patch), metav1.PatchOptions{FieldManager: "kube-controller-manager"}, "status"); err == nil {
				died.Add(1)
			}
		}
	}()
	return func() (int, int) {
		n, tainted := int(died.Load()), 0
		for i := first; i < first+n; i++ {
			node, err := c.cs.CoreV1().Nodes().Get(context.Background(), fmt.Sprintf("k3s-agent-%05d", i), metav1.GetOptions{})
			if err != nil {
				continue
			}
			for _, tn := range node.Spec.Taints {
				if tn.Key == "node.kubernetes.io/out-of-service" {
					tainted++
				}
			}
		}
		return n, tainted
	}
}

func TestBenchAPIServer(t *testing.T) {
	if os.Getenv("NODERECOVER_E2E_BENCH") != "1" {
		t.Skip("a benchmark: NODERECOVER_E2E_BENCH=1 (bench/run.sh with BENCH_APISERVER=1)")
	}
	c := getCluster(t)
	noderecoverBin(t)
	ctx := context.Background()
	nodes := benchInt(t, "NODERECOVER_E2E_BENCH_NODES", 1000)
	window := benchDuration(t, "NODERECOVER_E2E_BENCH_WINDOW", 3*time.Minute)
	applyManifests(t, c, false)
	// watch on nodes, in case the binary's manifests do not grant it yet (they do once it watches)
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "e2e-bench-watch"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"watch"}}}}
	if _, err := c.cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "e2e-bench-watch"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "e2e-bench-watch"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: saName, Namespace: saNamespace}}}
	if _, err := c.cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tokenFile, _ := saToken(t, c, saNamespace, saName)
	stopProc(t, c, "kube-controller-manager")

	t0 := time.Now()
	var wg sync.WaitGroup
	var firstErr atomic.Value
	next := atomic.Int64{}
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= nodes {
					return
				}
				if err := k3sNode(ctx, c, i); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		t.Fatalf("registering nodes: %v", err)
	}
	raw, err := c.cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d k3s-shaped nodes registered in %s; a list of all is %.1f MiB of JSON", nodes, fmtSeconds(time.Since(t0)), float64(len(raw))/(1<<20))

	rl := startRelay(t, strings.TrimPrefix(c.server, "https://"))
	apiPID, etcdPID := procPID(t, c, "kube-apiserver"), procPID(t, c, c.datastore)
	user := saUser(saNamespace, saName)
	var rows []benchRow
	// during: started with the window, ended with it, telling how many nodes died and were tainted
	measureWindow := func(load, what string, args []string, window time.Duration, during func(context.Context) func() (int, int)) {
		var w *watcher
		if args != nil {
			// through the relay, which counts the bytes
			w = startWatcher(t, c, "bench-"+strings.ReplaceAll(load+"-"+what, " ", "-"), append([]string{"run",
				"--server", rl.url(), "--ca-file", c.caFile, "--token-file", tokenFile}, args...)...)
		}
		time.Sleep(20 * time.Second)
		from := time.Now()
		a0, e0, d0, u0 := cpuTicks(t, apiPID), cpuTicks(t, etcdPID), rl.down.Load(), rl.up.Load()
		var n0 int64
		if w != nil {
			n0 = cpuTicks(t, w.cmd.Process.Pid)
		}
		var counts func() (int, int)
		dctx, dstop := context.WithCancel(ctx)
		if during != nil {
			counts = during(dctx)
		}
		time.Sleep(window)
		dstop()
		row := benchRow{load: load, what: what, window: time.Since(from),
			apiCPU: float64(cpuTicks(t, apiPID)-a0) / 100, etcdCPU: float64(cpuTicks(t, etcdPID)-e0) / 100,
			down: rl.down.Load() - d0, up: rl.up.Load() - u0}
		if counts != nil {
			row.died, row.tainted = counts()
		}
		if w != nil {
			row.nr = float64(cpuTicks(t, w.cmd.Process.Pid)-n0) / 100
			if w.exited() {
				t.Fatalf("noderecover (%s) exited: %v\n%s", what, w.err, w.log())
			}
			w.stop(t)
			for _, r := range requests(t, c, user, from) {
				if r.resource() == "nodes" && r.RequestReceivedTimestamp.Before(from.Add(row.window)) {
					switch r.Verb {
					case "list":
						row.lists++
					case "watch":
						row.watches++
					}
				}
			}
		}
		t.Logf("%s, %s: kube-apiserver %.2f s CPU, %s %.2f s, noderecover %.2f s, %d bytes to noderecover in %s",
			load, what, row.apiCPU, c.datastore, row.etcdCPU, row.nr, row.down, fmtSeconds(row.window))
		rows = append(rows, row)
	}
	base := []string{"--self-node", "none", "--taint-after", "300"}
	pollArgs := append(append([]string{}, base...), "--poll", "15")
	pollArgs = append(pollArgs, pollingOnly(t)...)
	watches := binaryWatches(t)
	loads := strings.Fields(os.Getenv("NODERECOVER_E2E_BENCH_LOADS"))
	if len(loads) == 0 {
		loads = []string{"idle", "changes", "rolling"}
	}
	rolling := benchDuration(t, "NODERECOVER_E2E_BENCH_ROLLING", 5*time.Minute)
	dead := make([]atomic.Bool, nodes)
	nextDead := 0
	for _, load := range loads {
		var stop context.CancelFunc = func() {}
		if load == "changes" || load == "rolling" {
			var hctx context.Context
			hctx, stop = context.WithCancel(ctx)
			heartbeats(hctx, c, nodes, 5*time.Minute, dead)
		}
		if load != "rolling" {
			measureWindow(load, "no noderecover", nil, window, nil)
			measureWindow(load, "polling every 15 s", pollArgs, window, nil)
			if watches {
				measureWindow(load, "watching", base, window, nil)
			}
			stop()
			continue
		}
		// each window's dying nodes are its own: one every 6 s
		die := func(ctx context.Context) func() (int, int) {
			first := nextDead
			nextDead += int(rolling/(6*time.Second)) + 1
			return dying(ctx, c, first, 6*time.Second, dead)
		}
		fast := func(args []string) []string {
			out := append([]string{}, args...)
			for i := range out {
				if out[i] == "300" && i > 0 && out[i-1] == "--taint-after" {
					out[i] = "10"
				}
			}
			return out
		}
		measureWindow(load, "no noderecover", nil, rolling, die)
		measureWindow(load, "polling every 15 s", fast(pollArgs), rolling, die)
		if watches {
			measureWindow(load, "watching", fast(base), rolling, die)
		}
		stop()
	}
	report := benchReport(c, nodes, len(raw), window, rolling, rows, watches)
	fmt.Print(report)
	if out := os.Getenv("NODERECOVER_E2E_BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(report), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// benchInt and benchDuration: a benchmark's setting from the environment, or def.
func benchInt(t *testing.T, name string, def int) int {
	t.Helper()
	if s := os.Getenv(name); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return n
	}
	return def
}

func benchDuration(t *testing.T, name string, def time.Duration) time.Duration {
	t.Helper()
	if s := os.Getenv(name); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return d
	}
	return def
}

func benchReport(c *cluster, nodes, listBytes int, window, rolling time.Duration, rows []benchRow, watches bool) string {
	var b strings.Builder
	perHour := func(x float64, d time.Duration) float64 { return x * float64(time.Hour) / float64(d) }
	fmt.Fprintf(&b, "kube-apiserver %s, %s; %d k3s-shaped nodes (a list of all: %.1f MiB of JSON); windows of %s (rolling: %s) after 20 s of warm-up; CPU from /proc/PID/stat, bytes through a loopback relay (TLS included), both extrapolated to an hour; lists as the audit log counts them (a one-node read of the store's revision is one).\n\n",
		c.serverVersion, c.store(), nodes, float64(listBytes)/(1<<20), window, rolling)
	fmt.Fprintf(&b, "| load | noderecover | kube-apiserver CPU s/h (%% of a core) | less the floor | %s CPU s/h | noderecover CPU s/h | bytes to noderecover /h | bytes from it /h | lists / watches | died / tainted |\n", c.datastore)
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	floor := map[string]float64{}
	share := map[string]float64{}
	for _, r := range rows {
		api := perHour(r.apiCPU, r.window)
		if r.what == "no noderecover" {
			floor[r.load] = api
		}
		less := api - floor[r.load]
		share[r.load+" "+r.what] = less
		lessS := "-"
		if r.what != "no noderecover" {
			lessS = fmt.Sprintf("%.1f (%.2f%%)", less, less/36)
		}
		died := "-"
		if r.load == "rolling" {
			died = fmt.Sprintf("%d / %d", r.died, r.tainted)
		}
		fmt.Fprintf(&b, "| %s | %s | %.1f (%.2f%%) | %s | %.1f | %.1f | %s | %s | %d / %d | %s |\n", r.load, r.what, api, api/36, lessS,
			perHour(r.etcdCPU, r.window), perHour(r.nr, r.window), fmtBytes(perHour(float64(r.down), r.window)),
			fmtBytes(perHour(float64(r.up), r.window)), r.lists, r.watches, died)
	}
	if watches {
		for _, load := range []string{"idle", "changes", "rolling"} {
			if _, ok := floor[load]; !ok {
				continue
			}
			p, w := share[load+" polling every 15 s"], share[load+" watching"]
			if w > 0 {
				fmt.Fprintf(&b, "\n%s: the API server's CPU for noderecover, polling / watching: %.0fx", load, p/w)
			} else {
				fmt.Fprintf(&b, "\n%s: the API server's CPU for the watcher is within the floor's noise (%.1f s/h against %.1f s/h polling)", load, w, p)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

func fmtBytes(x float64) string {
	switch {
	case x >= 1<<30:
		return fmt.Sprintf("%.2f GiB", x/(1<<30))
	case x >= 1<<20:
		return fmt.Sprintf("%.1f MiB", x/(1<<20))
	default:
		return fmt.Sprintf("%.0f KiB", x/(1<<10))
	}
}
