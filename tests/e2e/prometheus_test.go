package e2e

// Scenario 16, the alerts and the dashboard on a real Prometheus: Debian's prometheus, started
// here on loopback as this user (no root, no systemd), scrapes noderecover's /metrics every
// second and evaluates deploy/prometheus's rules, made by make.sh with the long-taint
// threshold cut to taintedAlert seconds. One node dies: it is tainted, and the long-taint alert
// fires naming it, no sooner than the threshold after the taint, while the storm alert stays
// silent. Then every node goes silent: the storm alert fires during the storm and clears once
// the guard lifts. Prometheus's own alerts API is the witness. After it, every query of
// deploy/grafana/noderecover.json is evaluated over the scenario and must return data (a
// series the binary does not export yet, such as the watch's, may be empty), and headless
// Chromium saves Prometheus's graph of noderecover_nodes and noderecover_storm_guard_engaged to
// build/e2e-prometheus-storm.png. Never touches the network beyond loopback; owns no helper
// another scenario uses.

import (
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	taintedAlert = 10 // seconds: TAINTED_SECONDS of the rules in this scenario (an hour by default)
	rulesDir     = "../../deploy/prometheus"
	dashFile     = "../../deploy/grafana/noderecover.json"
	screenshot   = "../../build/e2e-prometheus-storm.png"
)

type promServer struct {
	url  string
	cmd  *exec.Cmd
	done chan struct{}
	log  string
}

// startPrometheus runs Debian's prometheus on a free loopback port, scraping target every
// second and evaluating rulesFile every second, its data in the cluster's directory.
func startPrometheus(t *testing.T, c *cluster, target, rulesFile string) *promServer {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatalf("prometheus not found: install Debian's prometheus package (./build.sh e2e and ./build.sh test do)")
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(c.dir, "prometheus")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}
rule_files: [%q]
scrape_configs:
  - job_name: noderecover
    static_configs: [{targets: [%q]}]
`, rulesFile, target)
	cfgFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &promServer{url: fmt.Sprintf("http://127.0.0.1:%d", port), done: make(chan struct{}), log: filepath.Join(dir, "prometheus.log")}
	f, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(bin, "--config.file="+cfgFile, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+strings.TrimPrefix(p.url, "http://"), "--storage.tsdb.retention.time=1h")
	p.cmd.Stdout, p.cmd.Stderr = f, f
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("start prometheus: %v", err)
	}
	go func() {
		p.cmd.Wait()
		f.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			b, _ := os.ReadFile(p.log)
			t.Logf("prometheus log:\n%s", b)
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if r, err := http.Get(p.url + "/-/ready"); err == nil {
			r.Body.Close()
			if r.StatusCode == 200 {
				break
			}
		}
		select {
		case <-p.done:
			b, _ := os.ReadFile(p.log)
			t.Fatalf("prometheus exited at start:\n%s", b)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready within 30s")
		}
		time.Sleep(200 * time.Millisecond)
	}
	return p
}

// api GETs a Prometheus API path and decodes its data member into out.
func (p *promServer) api(t *testing.T, path string, q url.Values, out any) {
	t.Helper()
	r, err := http.Get(p.url + path + "?" + q.Encode())
	if err != nil {
		t.Fatalf("prometheus %s: %v", path, err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	var env struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(b, &env); err != nil || env.Status != "success" {
		t.Fatalf("prometheus %s?%s: HTTP %d %s %s", path, q.Encode(), r.StatusCode, env.Error, b)
	}
	if err := json.Unmarshal(env.Data, out); err != nil {
		t.Fatalf("prometheus %s: %v", path, err)
	}
}

type promAlert struct {
	Labels   map[string]string `json:"labels"`
	State    string            `json:"state"`
	ActiveAt time.Time         `json:"activeAt"`
	Value    string            `json:"value"`
}

// firing returns the alerts named name that Prometheus says are firing.
func (p *promServer) firing(t *testing.T, name string) []promAlert {
	t.Helper()
	var d struct {
		Alerts []promAlert `json:"alerts"`
	}
	p.api(t, "/api/v1/alerts", nil, &d)
	var out []promAlert
	for _, a := range d.Alerts {
		if a.Labels["alertname"] == name && a.State == "firing" {
			out = append(out, a)
		}
	}
	return out
}

// waitFiring waits until the alert name fires (with the label node=node when node is set).
func (p *promServer) waitFiring(t *testing.T, c *cluster, name, node string, timeout time.Duration) promAlert {
	t.Helper()
	var got promAlert
	poll(t, c, "Prometheus firing "+name, timeout, func() bool {
		for _, a := range p.firing(t, name) {
			if node == "" || a.Labels["node"] == node {
				got = a
				return true
			}
		}
		return false
	})
	return got
}

func scrape(t *testing.T, target string) string {
	t.Helper()
	r, err := http.Get("http://" + target + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return string(b)
}

func TestPrometheus(t *testing.T) {
	c := getCluster(t)
	noderecoverBin(t)
	ctx := context.Background()
	applyManifests(t, c, false)
	tokenFile, _ := saToken(t, c, saNamespace, saName)

	rulesFile := filepath.Join(c.dir, "noderecover.rules.yaml")
	// the alerts' for: cut to a second too (a minute by default), as the threshold is
	out, err := exec.Command("sh", filepath.Join(rulesDir, "make.sh"), "rules", "TAINTED_SECONDS="+strconv.Itoa(taintedAlert),
		"TAINTED_FOR=1s", "STORM_FOR=1s").Output()
	if err != nil {
		t.Fatalf("make.sh rules: %v", err)
	}
	if !strings.Contains(string(out), fmt.Sprintf("> %d\n", taintedAlert)) {
		t.Fatalf("make.sh did not set the long-taint threshold to %d s:\n%s", taintedAlert, out)
	}
	if err := os.WriteFile(rulesFile, out, 0o644); err != nil {
		t.Fatal(err)
	}

	k := newKubelets(c.cs)
	defer k.removeAll(ctx)
	const total = 10
	nodes := make([]string, total)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("s16-%02d", i)
		if _, err := k.add(ctx, nodeSpec{name: nodes[i], alive: true}); err != nil {
			t.Fatal(err)
		}
	}
	// The storm guard counts every node of the cluster: only this scenario's may be there.
	onlyNodes(t, c, total)
	for _, n := range nodes {
		waitReady(t, c, n)
	}

	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	target := fmt.Sprintf("127.0.0.1:%d", port)
	p := startPrometheus(t, c, target, rulesFile)
	var build struct {
		Version string `json:"version"`
	}
	p.api(t, "/api/v1/status/buildinfo", nil, &build)
	started := time.Now()
	w := startWatcher(t, c, "s16", runArgs(c, tokenFile, "--self-node", "e2e-runner", "--taint-after", strconv.Itoa(taintAfter),
		"--poll", strconv.Itoa(pollEvery), "--listen", target)...)
	defer func() {
		if !w.stopped {
			w.stop(t)
		}
	}()
	poll(t, c, "Prometheus scraping noderecover", 30*time.Second, func() bool {
		var v struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		}
		p.api(t, "/api/v1/query", url.Values{"query": {`up{job="noderecover"}`}}, &v)
		return len(v.Result) == 1 && v.Result[0].Value[1] == "1"
	})
	measure(t, "scenario 16: Prometheus %s scraping noderecover's /metrics %s after both started", build.Version, fmtSeconds(time.Since(started)))

	// One node dies: tainted, then, the threshold after the taint, the long-taint alert names it.
	dying := nodes[0]
	k.stop(dying)
	waitUnknown(t, c, dying)
	tainted := poll(t, c, dying+" tainted", time.Duration(taintAfter+20)*time.Second, func() bool { return hasOurTaint(getNode(t, c, dying)) })
	since, err := time.Parse(time.RFC3339, getNode(t, c, dying).Annotations[ourAnno])
	if err != nil {
		t.Fatalf("%s: our annotation does not read as a time: %v", dying, err)
	}
	a := p.waitFiring(t, c, "NoderecoverNodeTaintedTooLong", dying, time.Duration(taintedAlert+30)*time.Second)
	if a.ActiveAt.Sub(since) < taintedAlert*time.Second {
		t.Errorf("NoderecoverNodeTaintedTooLong for %s active at %s, %s after the taint (%s): sooner than the threshold of %ds",
			dying, a.ActiveAt.Format(time.RFC3339Nano), a.ActiveAt.Sub(since), since.Format(time.RFC3339), taintedAlert)
	}
	if a.Labels["severity"] != "warning" || a.Labels["job"] != "noderecover" || a.Labels["instance"] != target {
		t.Errorf("NoderecoverNodeTaintedTooLong labels %v", a.Labels)
	}
	measure(t, "scenario 16: %s tainted; NoderecoverNodeTaintedTooLong firing %s after the taint (threshold %ds), naming it",
		dying, fmtSeconds(time.Since(tainted)), taintedAlert)
	if got := p.firing(t, "NoderecoverStormGuardEngaged"); len(got) != 0 {
		t.Errorf("NoderecoverStormGuardEngaged firing with 1 of %d nodes Unknown: %v", total, got)
	}

	// Every node silent: the storm guard engages and its alert fires during the storm.
	for _, n := range nodes[1:] {
		k.stop(n)
	}
	w.waitLog(t, 0, "Storm guard engaged: ", 40*time.Second)
	engaged := time.Now()
	p.waitFiring(t, c, "NoderecoverStormGuardEngaged", "", 20*time.Second)
	measure(t, "scenario 16: NoderecoverStormGuardEngaged firing %s after the guard engaged", fmtSeconds(time.Since(engaged)))
	if strings.Contains(w.log(), "Storm guard lifted: ") {
		t.Errorf("the storm guard lifted before its alert was seen firing: the alert was not seen during the storm")
	}
	// The whole storm on the graph: every node Unknown, for a few scrapes.
	for _, n := range nodes {
		waitUnknown(t, c, n)
	}
	time.Sleep(5 * time.Second)
	if got := p.firing(t, "NoderecoverStormGuardEngaged"); len(got) != 1 {
		t.Errorf("NoderecoverStormGuardEngaged not firing with all %d nodes Unknown: %v", total, got)
	}

	// Every node back: the guard cools down, lifts, and the alert clears; the dying node's taint
	// is cleared, and its alert clears too.
	off := len(w.log())
	for _, n := range nodes {
		k.resume(n)
	}
	for _, n := range nodes {
		waitReady(t, c, n)
	}
	w.waitLog(t, off, "Storm guard lifted: ", time.Duration(taintAfter+30)*time.Second)
	lifted := time.Now()
	poll(t, c, "NoderecoverStormGuardEngaged cleared", 20*time.Second, func() bool {
		return len(p.firing(t, "NoderecoverStormGuardEngaged")) == 0
	})
	measure(t, "scenario 16: NoderecoverStormGuardEngaged cleared %s after the guard lifted", fmtSeconds(time.Since(lifted)))
	poll(t, c, "NoderecoverNodeTaintedTooLong cleared", 30*time.Second, func() bool {
		return len(p.firing(t, "NoderecoverNodeTaintedTooLong")) == 0
	})
	if hasOurTaint(getNode(t, c, dying)) {
		t.Errorf("%s still tainted after it came back", dying)
	}
	time.Sleep(3 * time.Second) // a few more scrapes after the storm, for the graph
	exposition := scrape(t, target)
	end := time.Now()

	dashboardQueries(t, p, exposition, started, end)
	screenshotStorm(t, p, end.Sub(started))
	w.stop(t)
}

// dashboardQueries evaluates every query of the dashboard over [from, to] and wants data from
// each, except from one that reads a metric the binary's exposition does not name yet.
func dashboardQueries(t *testing.T, p *promServer, exposition string, from, to time.Time) {
	t.Helper()
	b, err := os.ReadFile(dashFile)
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		Title   string `json:"title"`
		Targets []struct {
			RefID string `json:"refId"`
			Expr  string `json:"expr"`
		} `json:"targets"`
		Panels []json.RawMessage `json:"panels"`
	}
	var d struct {
		Panels []panel `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashFile, err)
	}
	metric := regexp.MustCompile(`\bnoderecover_[a-z_]+\b`)
	withData, empty, n := 0, 0, 0
	for _, pn := range d.Panels {
		for _, tg := range pn.Targets {
			n++
			q := strings.NewReplacer(`$job`, "noderecover", `$instance`, ".*", `$__rate_interval`, "10s").Replace(tg.Expr)
			var r struct {
				Result []json.RawMessage `json:"result"`
			}
			p.api(t, "/api/v1/query_range", url.Values{"query": {q}, "start": {strconv.FormatInt(from.Unix(), 10)},
				"end": {strconv.FormatInt(to.Unix(), 10)}, "step": {"2"}}, &r)
			if len(r.Result) > 0 {
				withData++
				continue
			}
			var absent []string
			for _, m := range metric.FindAllString(q, -1) {
				base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m, "_bucket"), "_sum"), "_count")
				if !strings.Contains(exposition, "# TYPE "+base+" ") {
					absent = append(absent, m)
				}
			}
			if len(absent) == 0 {
				t.Errorf("dashboard panel %q query %s returned no data over the scenario: %s", pn.Title, tg.RefID, q)
			} else {
				empty++
				t.Logf("dashboard panel %q query %s: no data, and this build does not export %v", pn.Title, tg.RefID, absent)
			}
		}
	}
	if n == 0 {
		t.Fatalf("%s: no queries found", dashFile)
	}
	measure(t, "scenario 16: dashboard queries over the scenario: %d of %d returned data; %d read series this build does not export", withData, n, empty)
}

// screenshotStorm saves Prometheus's graph page of the node counts and the storm guard over
// the last span, taken by Debian's headless Chromium.
func screenshotStorm(t *testing.T, p *promServer, span time.Duration) {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Errorf("chromium not found: install Debian's chromium package (./build.sh e2e and ./build.sh test do); no screenshot taken")
		return
	}
	rng := fmt.Sprintf("%ds", int(span.Seconds())+5)
	q := url.Values{}
	for i, e := range []string{`noderecover_nodes{job="noderecover"}`, `noderecover_storm_guard_engaged{job="noderecover"}`} {
		g := fmt.Sprintf("g%d.", i)
		q.Set(g+"expr", e)
		q.Set(g+"tab", "0")
		q.Set(g+"range_input", rng)
		q.Set(g+"stacked", "0")
	}
	abs, err := filepath.Abs(screenshot)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Remove(abs)
	profile := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
		"--user-data-dir="+profile, "--window-size=820,1700", "--virtual-time-budget=8000", "--screenshot="+abs,
		p.url+"/graph?"+q.Encode())
	started := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("chromium: %v\n%s", err, out)
		return
	}
	f, err := os.Open(abs)
	if err != nil {
		t.Errorf("chromium wrote no screenshot: %v\n%s", err, out)
		return
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Errorf("%s: not a PNG: %v", abs, err)
		return
	}
	// A blank or error page has a handful of colours; the graph's lines and text many more.
	colours := map[uint32]bool{}
	bd := img.Bounds()
	for y := bd.Min.Y; y < bd.Max.Y; y += 3 {
		for x := bd.Min.X; x < bd.Max.X; x += 3 {
			r, g, b, _ := img.At(x, y).RGBA()
			colours[r>>11<<10|g>>11<<5|b>>11] = true
		}
	}
	if len(colours) < 20 {
		t.Errorf("%s: only %d colours: a blank page, not a graph", abs, len(colours))
	}
	st, _ := f.Stat()
	measure(t, "scenario 16: screenshot of Prometheus's graph of noderecover_nodes and noderecover_storm_guard_engaged: %s, %dx%d, %d bytes, %d colours, %s",
		"build/"+filepath.Base(abs), bd.Dx(), bd.Dy(), st.Size(), len(colours), fmtSeconds(time.Since(started)))
}
