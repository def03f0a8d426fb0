package e2e

// The README's Helm install and monitoring set-up followed command by command, as a new user
// would (issue 24): the first sh block under "### With Helm" in README.md, the one in the
// chart's README, and the one under "## Alerts, runbook and dashboard", each line run by sh in
// the checkout with helm and kubectl on the PATH and the control plane in ~/.kube/config;
// `helm test`'s pod is run by testKubelet. The Prometheus Operator's PodMonitor and
// PrometheusRule kinds are stand-ins here (CRDs that keep any field): what the walk proves of
// them is that the chart makes them, where and labelled as the README says. After each
// block's last line (the monitoring block: after an uninstall), nothing is left but the
// namespace. Needs NODERECOVER_HELM and NODERECOVER_KUBECTL (tests/helm/run.sh sets both);
// skipped without.

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// standInCRD makes kind (plural) of monitoring.coreos.com/v1, keeping any field, and waits
// until it is served.
func standInCRD(t *testing.T, c *cluster, kind, plural string) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(c.config)
	if err != nil {
		t.Fatal(err)
	}
	crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + ".monitoring.coreos.com"},
		"spec": map[string]any{
			"group": "monitoring.coreos.com", "scope": "Namespaced",
			"names": map[string]any{"kind": kind, "plural": plural, "singular": strings.ToLower(kind), "listKind": kind + "List"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
		},
	}}
	ctx := context.Background()
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("CRD %s: %v", plural, err)
	}
	poll(t, c, plural+" served", 30*time.Second, func() bool {
		_, err := dyn.Resource(schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: plural}).
			Namespace("default").List(ctx, metav1.ListOptions{})
		return err == nil
	})
}

// shBlock returns the lines of the first ```sh block after the line heading in file.
func shBlock(t *testing.T, file, heading string) []string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	seen, in := heading == "", false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case !seen:
			seen = l == heading
		case !in && l == "```sh":
			in = true
		case in && l == "```":
			return lines
		case in:
			// a line ending in \ goes on on the next
			if n := len(lines); n > 0 && strings.HasSuffix(lines[n-1], "\\") {
				lines[n-1] = strings.TrimSuffix(lines[n-1], "\\") + strings.TrimSpace(l)
			} else {
				lines = append(lines, l)
			}
		}
	}
	t.Fatalf("%s: no ```sh block after %q", file, heading)
	return nil
}

func TestReadmeHelm(t *testing.T) {
	helm, kubectl := os.Getenv("NODERECOVER_HELM"), os.Getenv("NODERECOVER_KUBECTL")
	if helm == "" || kubectl == "" {
		t.Skip("NODERECOVER_HELM or NODERECOVER_KUBECTL is not set (tests/helm/run.sh runs this test with both)")
	}
	c := getCluster(t)
	noderecoverBin(t)
	top, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	// a new user's machine: helm and kubectl on the PATH, the cluster in ~/.kube/config
	home := filepath.Join(c.dir, "readme-home")
	bin := filepath.Join(home, "bin")
	if err := os.MkdirAll(filepath.Join(home, ".kube"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(bin, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"helm": helm, "kubectl": kubectl} {
		if err := os.Symlink(target, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(home, ".kube", "config"), []byte(`apiVersion: v1
kind: Config
clusters:
  - name: e2e
    cluster: {server: "`+c.server+`", certificate-authority: "`+c.caFile+`"}
users:
  - name: admin
    user: {token: "`+c.adminToken+`"}
contexts:
  - name: e2e
    context: {cluster: e2e, user: admin}
current-context: e2e
`), 0o600); err != nil {
		t.Fatal(err)
	}
	standInCRD(t, c, "PodMonitor", "podmonitors")
	standInCRD(t, c, "PrometheusRule", "prometheusrules")
	for _, doc := range []struct{ file, heading string }{
		{"README.md", "### With Helm"},
		{"deploy/helm/noderecover/README.md", ""},
		{"README.md", "## Alerts, runbook and dashboard"},
	} {
		lines := shBlock(t, filepath.Join(top, doc.file), doc.heading)
		monitoring := strings.HasPrefix(doc.heading, "## Alerts")
		before := inventory(t, c)
		stop, ran := make(chan struct{}), make(chan string, 8)
		go testKubelet(t, c, "noderecover", stop, ran)
		var out []byte
		for _, line := range lines {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			cmd := exec.CommandContext(ctx, "sh", "-c", line)
			cmd.Dir = top
			cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + home, "LANG=C"}
			out, err = cmd.CombinedOutput()
			cancel()
			if err != nil {
				t.Fatalf("%s, as written: %s\n%v\n%s", doc.file, line, err, out)
			}
			t.Logf("%s: %s: ok", doc.file, line)
			if strings.HasPrefix(line, "helm test ") && !strings.Contains(string(out), "Phase:          Succeeded") {
				t.Errorf("%s: %s: the test did not pass:\n%s", doc.file, line, out)
			}
		}
		close(stop)
		if monitoring {
			// the last line lists what the operator would read, in the release's namespace
			for _, want := range []string{"podmonitor.monitoring.coreos.com/noderecover", "prometheusrule.monitoring.coreos.com/noderecover"} {
				if !strings.Contains(string(out), want) {
					t.Errorf("%s: the last line's output has no %s:\n%s", doc.file, want, out)
				}
			}
			h := helmCLI{helm, filepath.Join(home, ".kube", "config"), home}
			h.run(t, "uninstall", "noderecover", "--namespace", "noderecover", "--wait")
			dyn, err := dynamic.NewForConfig(c.config)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range []string{"podmonitors", "prometheusrules"} {
				l, err := dyn.Resource(schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: r}).
					Namespace("noderecover").List(context.Background(), metav1.ListOptions{})
				if err != nil || len(l.Items) != 0 {
					t.Errorf("%s: %s left after the uninstall: %v", doc.file, r, err)
				}
			}
		} else if len(ran) == 0 {
			t.Errorf("%s: no helm test pod was run", doc.file)
		}
		ns, err := c.cs.CoreV1().Namespaces().Get(context.Background(), "noderecover", metav1.GetOptions{})
		if err != nil || ns.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
			t.Errorf("%s: namespace noderecover not labelled restricted: %v", doc.file, err)
		}
		left := difference(inventory(t, c), before)
		if len(left) > 1 || (len(left) == 1 && left[0] != "Namespace /noderecover") {
			t.Errorf("%s: left behind beyond the namespace:\n  %s", doc.file, strings.Join(left, "\n  "))
		}
	}
}
