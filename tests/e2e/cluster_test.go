package e2e

// The control plane: etcd (or kine over SQLite, k3s's default datastore), kube-apiserver and
// kube-controller-manager on loopback, free ports, one throwaway directory, all stopped on exit.

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Node lifecycle timing of the test control plane: a silent node goes Unknown
// nodeMonitorGrace after its last heartbeat (checked every nodeMonitorPeriod).
const (
	nodeMonitorPeriod = "1s"
	nodeMonitorGrace  = "8s"
	nodeStartupGrace  = "10s"
)

// kine's compaction in the kine runs: its own, every few seconds, keeping few revisions (its
// defaults are off, for kube-apiserver's compaction every 5 minutes, and 1000), so the relist
// after a compaction (scenario 17) is kine's doing and takes seconds, and every scenario on
// kine runs with a compactor busy beside it.
const (
	kineCompactInterval  = "5s"
	kineCompactMinRetain = 20
)

// datastore is the store the control plane runs on: NODERECOVER_E2E_DATASTORE, "etcd" (the
// default) or "kine" (kine over SQLite, as a single-server k3s keeps its state).
func datastore() (string, error) {
	switch d := os.Getenv("NODERECOVER_E2E_DATASTORE"); d {
	case "", "etcd":
		return "etcd", nil
	case "kine":
		return "kine", nil
	default:
		return "", fmt.Errorf("NODERECOVER_E2E_DATASTORE=%q: want etcd or kine", d)
	}
}

type cluster struct {
	dir        string
	binDir     string
	datastore  string // "etcd" or "kine": the store's process name as well
	kineDir    string // holds kine, when datastore is kine
	etcdURL    string // the store's etcd API (kine's too), what kube-apiserver's --etcd-servers names
	server     string // https://127.0.0.1:PORT
	caFile     string
	caPEM      []byte
	adminToken string
	auditLog   string
	config     *rest.Config
	cs         *kubernetes.Clientset

	etcdVersion   string // the store's version, etcd's or kine's
	serverVersion string
	startSeconds  float64

	mu    sync.Mutex
	procs []*proc
}

type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func freePorts(n int) ([]int, error) {
	// Hold all listeners open until every port is picked so none repeats.
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}

// makePKI writes ca.crt, server.crt/key (IP SAN 127.0.0.1) and sa.key (RSA, for
// ServiceAccount token signing) into dir.
func makePKI(dir string) error {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "noderecover-e2e-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:     []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	srvKeyDER, err := x509.MarshalECPrivateKey(srvKey)
	if err != nil {
		return err
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(dir, "ca.crt"), "CERTIFICATE", caDER); err != nil {
		return err
	}
	if err := writePEM(filepath.Join(dir, "server.crt"), "CERTIFICATE", srvDER); err != nil {
		return err
	}
	if err := writePEM(filepath.Join(dir, "server.key"), "EC PRIVATE KEY", srvKeyDER); err != nil {
		return err
	}
	return writePEM(filepath.Join(dir, "sa.key"), "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(saKey))
}

func randomToken() string {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return fmt.Sprintf("%x", b)
}

// Audit only what the tests read: every request of a ServiceAccount on nodes, with the
// request body for writes (patch and delete bodies are asserted on), and on leases (who held
// the lease when, for leader election).
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Request
    userGroups: ["system:serviceaccounts"]
    resources: [{group: "", resources: ["nodes"]}]
    verbs: ["patch", "delete", "update", "create", "deletecollection"]
  - level: Metadata
    userGroups: ["system:serviceaccounts"]
    resources: [{group: "", resources: ["nodes"]}, {group: "coordination.k8s.io", resources: ["leases"]}]
  - level: None
`

func (c *cluster) start(ctx context.Context, name string, args []string) (*proc, error) {
	return c.startBin(ctx, name, filepath.Join(c.binDir, name), args)
}

// startBin starts the program at path as component name (its log: name.log).
func (c *cluster) startBin(ctx context.Context, name, path string, args []string) (*proc, error) {
	logPath := filepath.Join(c.dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.Dir = c.dir
	// Dies with the test process even if it is killed (go test -timeout, SIGKILL).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, err
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	c.mu.Lock()
	c.procs = append(c.procs, p)
	c.mu.Unlock()
	return p, nil
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// waitHTTP polls url until check(status, body) is true, the process exits or the
// deadline passes.
func waitHTTP(ctx context.Context, p *proc, client *http.Client, url, token string, timeout time.Duration, check func(int, []byte) bool) error {
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		if p.exited() {
			return fmt.Errorf("%s exited (%v) before %s answered; log tail:\n%s", p.name, p.err, url, tail(p.log, 30))
		}
		req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if check(resp.StatusCode, body) {
				return nil
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, bytes.TrimSpace(body))
		} else {
			last = err.Error()
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("%s: %s not ready after %s (last: %.300s); log tail:\n%s", p.name, url, timeout, last, tail(p.log, 30))
}

func startCluster(ctx context.Context, binDir, store, kineDir string) (*cluster, error) {
	t0 := time.Now()
	dir, err := os.MkdirTemp("", "noderecover-e2e-")
	if err != nil {
		return nil, err
	}
	c := &cluster{dir: dir, binDir: binDir, datastore: store, kineDir: kineDir, adminToken: randomToken()}
	ok := false
	defer func() {
		if !ok {
			c.stop()
		}
	}()
	if err := makePKI(dir); err != nil {
		return nil, err
	}
	c.caFile = filepath.Join(dir, "ca.crt")
	if c.caPEM, err = os.ReadFile(c.caFile); err != nil {
		return nil, err
	}
	kcmToken := randomToken()
	tokens := fmt.Sprintf("%s,e2e-admin,e2e-admin,\"system:masters\"\n%s,system:kube-controller-manager,kcm,\"system:masters\"\n", c.adminToken, kcmToken)
	if err := os.WriteFile(filepath.Join(dir, "tokens.csv"), []byte(tokens), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "audit-policy.yaml"), []byte(auditPolicy), 0o600); err != nil {
		return nil, err
	}
	c.auditLog = filepath.Join(dir, "audit.log")
	ports, err := freePorts(4)
	if err != nil {
		return nil, err
	}
	etcdClient, etcdPeer, apiPort, kcmPort := ports[0], ports[1], ports[2], ports[3]

	if c.datastore == "kine" {
		if err := c.startKine(ctx, etcdClient); err != nil {
			return nil, err
		}
	} else if err := c.startEtcd(ctx, etcdClient, etcdPeer); err != nil {
		return nil, err
	}

	// kube-apiserver
	c.server = fmt.Sprintf("https://127.0.0.1:%d", apiPort)
	api, err := c.start(ctx, "kube-apiserver", []string{
		"--etcd-servers=" + c.etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", apiPort),
		"--tls-cert-file=" + filepath.Join(dir, "server.crt"),
		"--tls-private-key-file=" + filepath.Join(dir, "server.key"),
		"--client-ca-file=" + c.caFile,
		"--token-auth-file=" + filepath.Join(dir, "tokens.csv"),
		"--authorization-mode=Node,RBAC",
		"--anonymous-auth=false",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + filepath.Join(dir, "sa.key"),
		"--service-account-signing-key-file=" + filepath.Join(dir, "sa.key"),
		"--service-cluster-ip-range=10.96.0.0/24", // an allocation range in etcd only; nothing is sent there
		"--endpoint-reconciler-type=none",         // a loopback address cannot be an Endpoints address
		"--audit-policy-file=" + filepath.Join(dir, "audit-policy.yaml"),
		"--audit-log-path=" + c.auditLog,
		"--audit-log-mode=blocking",
		"--profiling=false",
		"--cert-dir=" + filepath.Join(dir, "apiserver-certs"),
	})
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.caPEM)
	secure := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if err := waitHTTP(ctx, api, secure, c.server+"/readyz", c.adminToken, 90*time.Second, func(code int, _ []byte) bool { return code == 200 }); err != nil {
		return nil, err
	}

	c.config = &rest.Config{
		Host:            c.server,
		BearerToken:     c.adminToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.caPEM},
		QPS:             1000,
		Burst:           2000,
		Timeout:         30 * time.Second,
	}
	if c.cs, err = kubernetes.NewForConfig(c.config); err != nil {
		return nil, err
	}
	v, err := c.cs.Discovery().ServerVersion()
	if err != nil {
		return nil, err
	}
	c.serverVersion = v.GitVersion

	// kube-controller-manager: only the controllers the scenarios exercise.
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: kcm
  user:
    token: %s
contexts:
- name: e2e
  context: {cluster: e2e, user: kcm}
current-context: e2e
`, c.server, c.caFile, kcmToken)
	kcmKubeconfig := filepath.Join(dir, "kcm.kubeconfig")
	if err := os.WriteFile(kcmKubeconfig, []byte(kubeconfig), 0o600); err != nil {
		return nil, err
	}
	kcm, err := c.start(ctx, "kube-controller-manager", []string{
		"--kubeconfig=" + kcmKubeconfig,
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", kcmPort),
		"--cert-dir=" + filepath.Join(dir, "kcm-certs"),
		"--leader-elect=false",
		"--controllers=node-lifecycle-controller,pod-garbage-collector-controller,taint-eviction-controller",
		"--node-monitor-period=" + nodeMonitorPeriod,
		"--node-monitor-grace-period=" + nodeMonitorGrace,
		"--node-startup-grace-period=" + nodeStartupGrace,
		"--profiling=false",
	})
	if err != nil {
		return nil, err
	}
	insecureLoopback := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		// kube-controller-manager serves /healthz with a self-signed certificate it makes
		// in --cert-dir; only its liveness is read here, on loopback.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
	}}
	if err := waitHTTP(ctx, kcm, insecureLoopback, fmt.Sprintf("https://127.0.0.1:%d/healthz", kcmPort), "", 60*time.Second, func(code int, _ []byte) bool { return code == 200 }); err != nil {
		return nil, err
	}
	c.startSeconds = time.Since(t0).Seconds()
	ok = true
	return c, nil
}

// startEtcd starts etcd on its client and peer ports and waits for its /health.
func (c *cluster) startEtcd(ctx context.Context, clientPort, peerPort int) error {
	c.etcdURL = fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	etcd, err := c.start(ctx, "etcd", []string{
		"--name=e2e",
		"--data-dir=" + filepath.Join(c.dir, "etcd-data"),
		"--listen-client-urls=" + c.etcdURL,
		"--advertise-client-urls=" + c.etcdURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=e2e=" + peerURL,
		"--log-level=warn",
		"--unsafe-no-fsync", // a throwaway test store; keeps 2 cores from waiting on disk
	})
	if err != nil {
		return err
	}
	plain := &http.Client{Timeout: 2 * time.Second}
	if err := waitHTTP(ctx, etcd, plain, c.etcdURL+"/health", "", 30*time.Second, func(code int, body []byte) bool {
		return code == 200 && bytes.Contains(body, []byte(`"health":"true"`))
	}); err != nil {
		return err
	}
	if resp, err := plain.Get(c.etcdURL + "/version"); err == nil {
		var v struct {
			Server string `json:"etcdserver"`
		}
		json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		c.etcdVersion = v.Server
	}
	return nil
}

// startKine starts kine on port with its default datastore, SQLite in ./db/state.db of the
// run's directory (as k3s keeps it in its server directory), and its default poll of the
// database every second. kine answers etcd's gRPC API but not etcd's HTTP /health or
// /version: this waits for its port, and kube-apiserver's /readyz for the rest.
func (c *cluster) startKine(ctx context.Context, port int) error {
	kine := filepath.Join(c.kineDir, "kine")
	if out, err := exec.Command(kine, "--version").Output(); err == nil {
		// "kine version v0.17.5 (HEAD)" (urfave/cli's --version)
		if f := strings.Fields(string(out)); len(f) >= 3 {
			c.etcdVersion = f[2]
		}
	}
	c.etcdURL = fmt.Sprintf("http://127.0.0.1:%d", port)
	p, err := c.startBin(ctx, "kine", kine, []string{
		fmt.Sprintf("--listen-address=127.0.0.1:%d", port),
		"--metrics-bind-address=0", // its default, :8080 on every address, is nothing of this test's
		"--compact-interval=" + kineCompactInterval,
		fmt.Sprintf("--compact-min-retain=%d", kineCompactMinRetain),
	})
	if err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if p.exited() {
			return fmt.Errorf("kine exited (%v) before it listened; log tail:\n%s", p.err, tail(p.log, 30))
		}
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			conn.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kine not listening on port %d after 30s: %v; log tail:\n%s", port, err, tail(p.log, 30))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// store names the datastore and its version: "etcd 3.6.8", "kine v0.17.5 (SQLite)".
func (c *cluster) store() string {
	if c.datastore == "kine" {
		return "kine " + c.etcdVersion + " (SQLite)"
	}
	return "etcd " + c.etcdVersion
}

// alive reports an error if a component died.
func (c *cluster) alive() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.procs {
		if p.exited() {
			return fmt.Errorf("%s exited (%v); log tail:\n%s", p.name, p.err, tail(p.log, 30))
		}
	}
	return nil
}

// stop ends every component, newest first: SIGTERM, then SIGKILL after 10s.
func (c *cluster) stop() {
	c.mu.Lock()
	procs := c.procs
	c.procs = nil
	c.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		p := procs[i]
		if p.exited() {
			continue
		}
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			p.cmd.Process.Kill()
			<-p.done
		}
	}
}

func (c *cluster) dumpLogs(w io.Writer) {
	for _, n := range []string{c.datastore, "kube-apiserver", "kube-controller-manager"} {
		fmt.Fprintf(w, "---- %s log tail ----\n%s\n", n, tail(filepath.Join(c.dir, n+".log"), 40))
	}
}
