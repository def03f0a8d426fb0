package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
)

const (
	oosKey       = "node.kubernetes.io/out-of-service"
	oosValue     = "nodeshutdown"
	ourAnno      = "github-runner.exadev/out-of-service-applied-at"
	pruneLabel   = "github-runner.exadev.io/removable"
	etcdLabel    = "node-role.kubernetes.io/etcd"
	cpLabel      = "node-role.kubernetes.io/control-plane"
	saNamespace  = "noderecover"
	saName       = "noderecover"
	deployDir    = "../../deploy"
	fieldManager = "noderecover-e2e"
)

// ---- the watcher subprocess ----

type syncBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type watcher struct {
	name    string
	cmd     *exec.Cmd
	stderr  *syncBuf
	logPath string
	done    chan struct{}
	err     error
	stopped bool
}

var (
	watchersMu sync.Mutex
	watchers   []*watcher
)

// startWatcher runs `noderecover ARGS...` with stderr captured (and copied to a file in
// the cluster directory).
func startWatcher(t *testing.T, c *cluster, name string, args ...string) *watcher {
	t.Helper()
	bin := noderecoverBin(t)
	w := &watcher{name: name, stderr: &syncBuf{}, logPath: filepath.Join(c.dir, "noderecover-"+name+".log"), done: make(chan struct{})}
	f, err := os.Create(w.logPath)
	if err != nil {
		t.Fatal(err)
	}
	w.cmd = exec.Command(bin, args...)
	w.cmd.Stdout = f
	w.cmd.Stderr = io.MultiWriter(w.stderr, f)
	w.cmd.Env = cleanEnv()
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	t.Logf("starting %s %s", bin, strings.Join(args, " "))
	if err := w.cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("start noderecover: %v", err)
	}
	go func() {
		w.err = w.cmd.Wait()
		f.Close()
		close(w.done)
	}()
	watchersMu.Lock()
	watchers = append(watchers, w)
	watchersMu.Unlock()
	t.Cleanup(func() {
		if !w.stopped {
			w.kill()
		}
		if t.Failed() {
			t.Logf("noderecover (%s) log:\n%s", name, w.stderr.String())
		} else {
			t.Logf("noderecover (%s) logged %d lines", name, strings.Count(w.stderr.String(), "\n"))
		}
	})
	return w
}

// cleanEnv is the environment without NODE_RECOVERY_* and KUBECONFIG, so only the
// flags a scenario passes configure the watcher.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "NODE_RECOVERY_") || strings.HasPrefix(kv, "KUBECONFIG=") ||
			strings.HasPrefix(kv, "KUBERNETES_SERVICE_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

func (w *watcher) exited() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

func (w *watcher) kill() {
	if w.exited() {
		return
	}
	w.cmd.Process.Kill()
	<-w.done
}

func stopAllWatchers() {
	watchersMu.Lock()
	defer watchersMu.Unlock()
	for _, w := range watchers {
		w.kill()
	}
}

// stop sends SIGTERM and expects exit status 0 within 10s.
func (w *watcher) stop(t *testing.T) {
	t.Helper()
	w.stopped = true
	if w.exited() {
		t.Errorf("noderecover (%s) had already exited: %v", w.name, w.err)
		return
	}
	w.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-w.done:
		if w.err != nil {
			t.Errorf("noderecover (%s) after SIGTERM: %v (want exit status 0)", w.name, w.err)
		}
	case <-time.After(10 * time.Second):
		w.kill()
		t.Errorf("noderecover (%s) did not exit within 10s of SIGTERM", w.name)
	}
}

func (w *watcher) log() string { return w.stderr.String() }

// waitLog waits until the watcher's stderr, from byte offset from on, contains substr.
func (w *watcher) waitLog(t *testing.T, from int, substr string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s := w.log()
		if from > len(s) {
			from = len(s)
		}
		if strings.Contains(s[from:], substr) {
			return
		}
		if w.exited() {
			t.Fatalf("noderecover (%s) exited (%v) before logging %q", w.name, w.err, substr)
		}
		if time.Now().After(deadline) {
			t.Fatalf("noderecover (%s) did not log %q within %s", w.name, substr, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// runOnce runs `noderecover once ARGS...` and returns its stderr and exit status.
func runOnce(t *testing.T, args ...string) (string, int) {
	t.Helper()
	bin := noderecoverBin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"once"}, args...)...)
	cmd.Env = cleanEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdout = &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("noderecover once: %v", err)
		}
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			t.Fatalf("noderecover once died of signal %v; stderr:\n%s", ws.Signal(), stderr.String())
		}
		code = ee.ExitCode()
	}
	t.Logf("noderecover once %s -> exit %d\n%s", strings.Join(args, " "), code, stderr.String())
	return stderr.String(), code
}

// ---- credentials ----

// saToken asks the TokenRequest API for a token of ns/name and writes it to a file.
func saToken(t *testing.T, c *cluster, ns, name string) (path, token string) {
	t.Helper()
	exp := int64(3600)
	tr, err := c.cs.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest for %s/%s: %v", ns, name, err)
	}
	path = filepath.Join(c.dir, "token-"+ns+"-"+name)
	if err := os.WriteFile(path, []byte(tr.Status.Token), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, tr.Status.Token
}

func connArgs(c *cluster, tokenFile string) []string {
	return []string{"--server", c.server, "--ca-file", c.caFile, "--token-file", tokenFile}
}

// runArgs is `run`, the connection flags, then extra.
func runArgs(c *cluster, tokenFile string, extra ...string) []string {
	return append(append([]string{"run"}, connArgs(c, tokenFile)...), extra...)
}

// canI asks the real authorizer, with a SubjectAccessReview, whether ns/name may verb nodes.
func canI(t *testing.T, c *cluster, ns, name, verb, resource string) bool {
	t.Helper()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               "system:serviceaccount:" + ns + ":" + name,
		Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Resource: resource},
	}}
	res, err := c.cs.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), sar, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SubjectAccessReview: %v", err)
	}
	return res.Status.Allowed
}

// ---- manifests ----

// manifestsArgs are the settings the tests generate manifests for: deploy/'s (see build.sh deploy).
func manifestsArgs(prune bool) []string {
	if prune {
		return []string{"--taint-after", "300", "--prune-after", "1800"}
	}
	return []string{"--taint-after", "300"}
}

// manifests returns the objects `noderecover manifests ARGS` prints.
func manifests(t *testing.T, prune bool) []*unstructured.Unstructured {
	t.Helper()
	args := append([]string{"manifests"}, manifestsArgs(prune)...)
	cmd := exec.Command(noderecoverBin(t), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("noderecover %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return parseManifest(t, "noderecover "+strings.Join(args, " "), out)
}

// readManifest returns the objects of deploy/FILE.
func readManifest(t *testing.T, file string) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(deployDir, file))
	if err != nil {
		t.Fatal(err)
	}
	return parseManifest(t, "deploy/"+file, b)
}

func parseManifest(t *testing.T, what string, b []byte) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if err == io.EOF {
				break
			}
			t.Fatalf("%s: %v", what, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		objs = append(objs, u)
	}
	return objs
}

// applyManifests server-side applies what `noderecover manifests` prints, as
// `kubectl apply --server-side -f` would. The Deployment is only validated (server-side dry
// run): no controller here would run its pod, and the watcher runs as a subprocess instead,
// with the token of the ServiceAccount these objects make.
func applyManifests(t *testing.T, c *cluster, prune bool) {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(c.config)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dyn, err := dynamic.NewForConfig(c.config)
	if err != nil {
		t.Fatal(err)
	}
	what := "noderecover manifests " + strings.Join(manifestsArgs(prune), " ")
	for _, u := range manifests(t, prune) {
		gvk := u.GroupVersionKind()
		m, err := mapper.RESTMapping(schema.GroupKind{Group: gvk.Group, Kind: gvk.Kind}, gvk.Version)
		if err != nil {
			t.Fatalf("%s: %s: %v", what, gvk, err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == "namespace" {
			ri = dyn.Resource(m.Resource).Namespace(u.GetNamespace())
		}
		opts := metav1.ApplyOptions{FieldManager: fieldManager, Force: true}
		dryRun := gvk.Kind == "Deployment"
		if dryRun {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		if _, err := ri.Apply(context.Background(), u.GetName(), u, opts); err != nil {
			t.Fatalf("apply %s %s/%s from %s: %v", gvk.Kind, u.GetNamespace(), u.GetName(), what, err)
		}
		verb := "applied"
		if dryRun {
			verb = "validated (server-side dry run)"
		}
		t.Logf("%s %s %s from %s", verb, gvk.Kind, u.GetName(), what)
	}
}

// ---- node state ----

func getNode(t *testing.T, c *cluster, name string) *corev1.Node {
	t.Helper()
	n, err := c.cs.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get node %s: %v", name, err)
	}
	return n
}

func nodeExists(t *testing.T, c *cluster, name string) bool {
	t.Helper()
	_, err := c.cs.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatalf("get node %s: %v", name, err)
	}
	return true
}

func readyOf(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

func oosTaints(n *corev1.Node) []corev1.Taint {
	var out []corev1.Taint
	for _, tn := range n.Spec.Taints {
		if tn.Key == oosKey {
			out = append(out, tn)
		}
	}
	return out
}

func hasOurTaint(n *corev1.Node) bool {
	for _, tn := range n.Spec.Taints {
		if tn.Key == oosKey && tn.Value == oosValue && tn.Effect == corev1.TaintEffectNoExecute {
			return true
		}
	}
	return false
}

func hasTaint(n *corev1.Node, key, value string, effect corev1.TaintEffect) bool {
	for _, tn := range n.Spec.Taints {
		if tn.Key == key && tn.Value == value && tn.Effect == effect {
			return true
		}
	}
	return false
}

// onlyNodes fails the test unless the cluster holds exactly total nodes: a scenario whose
// outcome depends on the count (paging, the storm guard) has the cluster to itself.
func onlyNodes(t *testing.T, c *cluster, total int) {
	t.Helper()
	list, err := c.cs.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != total {
		t.Fatalf("%d nodes in the cluster, want only the %d of this scenario", len(list.Items), total)
	}
}

// poll calls f every 100ms until it returns true or timeout passes; returns when it did.
func poll(t *testing.T, c *cluster, what string, timeout time.Duration, f func() bool) time.Time {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if f() {
			return time.Now()
		}
		if err := c.alive(); err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitUnknown waits until the node lifecycle controller marks name Ready=Unknown and
// returns the condition's lastTransitionTime (what the watcher measures from).
func waitUnknown(t *testing.T, c *cluster, name string) time.Time {
	t.Helper()
	var ltt time.Time
	poll(t, c, name+" Ready=Unknown", 40*time.Second, func() bool {
		n := getNode(t, c, name)
		if r := readyOf(n); r != nil && r.Status == corev1.ConditionUnknown {
			ltt = r.LastTransitionTime.Time
			return true
		}
		return false
	})
	return ltt
}

func waitReady(t *testing.T, c *cluster, name string) time.Time {
	t.Helper()
	return poll(t, c, name+" Ready=True", 30*time.Second, func() bool {
		r := readyOf(getNode(t, c, name))
		return r != nil && r.Status == corev1.ConditionTrue
	})
}

// sleepUntil sleeps until at.
func sleepUntil(at time.Time) {
	if d := time.Until(at); d > 0 {
		time.Sleep(d)
	}
}

// ---- a record of every state each node was seen in ----

// nodeRecorder watches nodes and keeps every version of each one it is told about, so
// "never tainted" means never, not "not at the moment we looked".
type nodeRecorder struct {
	mu      sync.Mutex
	seen    map[string][]*corev1.Node
	cancel  context.CancelFunc
	done    chan struct{}
	watchEr error
}

func recordNodes(t *testing.T, c *cluster) *nodeRecorder {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &nodeRecorder{seen: map[string][]*corev1.Node{}, cancel: cancel, done: make(chan struct{})}
	list, err := c.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		r.add(&list.Items[i])
	}
	rv := list.ResourceVersion
	go func() {
		defer close(r.done)
		for ctx.Err() == nil {
			w, err := c.cs.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
			if err != nil {
				if ctx.Err() == nil {
					r.mu.Lock()
					r.watchEr = err
					r.mu.Unlock()
				}
				return
			}
			for ev := range w.ResultChan() {
				if n, ok := ev.Object.(*corev1.Node); ok {
					rv = n.ResourceVersion
					if ev.Type != "BOOKMARK" {
						r.add(n)
					}
				}
			}
		}
	}()
	t.Cleanup(r.stop)
	return r
}

func (r *nodeRecorder) add(n *corev1.Node) {
	r.mu.Lock()
	r.seen[n.Name] = append(r.seen[n.Name], n.DeepCopy())
	r.mu.Unlock()
}

func (r *nodeRecorder) stop() {
	r.cancel()
	<-r.done
}

// check reports the first recorded version of name for which bad returns a reason.
func (r *nodeRecorder) check(t *testing.T, name string, bad func(*corev1.Node) string) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.watchEr != nil {
		t.Errorf("node watch failed: %v", r.watchEr)
	}
	versions := r.seen[name]
	if len(versions) == 0 {
		t.Errorf("node %s was never seen by the recorder", name)
	}
	for _, n := range versions {
		if why := bad(n); why != "" {
			t.Errorf("node %s (resourceVersion %s): %s", name, n.ResourceVersion, why)
			return
		}
	}
}

// ---- the apiserver's audit log ----

type auditEvent struct {
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
	RequestObject            json.RawMessage `json:"requestObject"`
	RequestReceivedTimestamp time.Time       `json:"requestReceivedTimestamp"`
	StageTimestamp           time.Time       `json:"stageTimestamp"`
}

// auditEvents returns the completed requests of user since from.
func auditEvents(t *testing.T, c *cluster, user string, from time.Time) []auditEvent {
	t.Helper()
	f, err := os.Open(c.auditLog)
	if err != nil {
		t.Fatalf("audit log: %v", err)
	}
	defer f.Close()
	var out []auditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev auditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			continue
		}
		if ev.Stage != "ResponseComplete" || ev.User.Username != user || ev.StageTimestamp.Before(from) {
			continue
		}
		out = append(out, ev)
	}
	return out
}

func saUser(ns, name string) string { return "system:serviceaccount:" + ns + ":" + name }

func fmtSeconds(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }
