// Command checker checks noderecover's monitoring artefacts without any server:
//
//	checker dashboard DASHBOARD.json METRICS.txt [EXTRA_METRIC...]
//	checker rules RULES.yaml PROMETHEUSRULE.yaml
//
// dashboard: the Grafana dashboard read strictly by the Grafana Foundation SDK (an unknown or
// missing field is an error) and validated by it, then the rules the SDK does not know: the
// import's __inputs (one Prometheus datasource, which the datasource variable starts on, so
// Grafana asks for it on import), a datasource variable every panel and query uses, job and
// instance variables every metric selector uses, the acting replica alone for the gauges a
// standby keeps stale, "never" for a timestamp never set (0, or -1), titles, unique ids,
// panels inside the 24 columns without overlap, and every query naming only metrics
// noderecover exports (those with a TYPE line in METRICS.txt, an exposition of the binary,
// plus EXTRA_METRIC names).
// rules: the plain rules file and the PrometheusRule hold the same groups, and every alert
// has a severity, a summary and a description.
//
// It prints one line per finding and exits 1 if there is any, 2 on bad usage; it never
// contacts Grafana, Prometheus or a cluster, and never writes a file.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"gopkg.in/yaml.v3"
)

var findings []string

func finding(format string, args ...any) { findings = append(findings, fmt.Sprintf(format, args...)) }

// sdkErr is err unless it is the SDK's empty error list: UnmarshalJSONStrict and Validate
// return a cog.BuildErrors that is nil as a slice but not as an interface on success.
func sdkErr(err error) error {
	var be cog.BuildErrors
	if errors.As(err, &be) && len(be) == 0 {
		return nil
	}
	return err
}

// The dashboard as plain JSON, for what the SDK's types do not say.
type rawPanel struct {
	ID         *int                      `json:"id"`
	Type       string                    `json:"type"`
	Title      string                    `json:"title"`
	Datasource *rawDatasource            `json:"datasource"`
	GridPos    *struct{ X, Y, W, H int } `json:"gridPos"`
	Targets    []struct {
		RefID      string         `json:"refId"`
		Expr       string         `json:"expr"`
		Datasource *rawDatasource `json:"datasource"`
	} `json:"targets"`
	Panels      []rawPanel `json:"panels"`
	FieldConfig struct {
		Defaults struct {
			Mappings []struct {
				Type    string `json:"type"`
				Options map[string]struct {
					Text string `json:"text"`
				} `json:"options"`
			} `json:"mappings"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
}

type rawDatasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type rawDashboard struct {
	UID        string     `json:"uid"`
	Title      string     `json:"title"`
	Panels     []rawPanel `json:"panels"`
	Templating struct {
		List []struct {
			Type       string         `json:"type"`
			Name       string         `json:"name"`
			Query      any            `json:"query"`
			Datasource *rawDatasource `json:"datasource"`
			Current    *struct {
				Value any `json:"value"`
			} `json:"current"`
		} `json:"list"`
	} `json:"templating"`
	Inputs []struct {
		Name     string `json:"name"`
		Type     string `json:"type"`
		PluginID string `json:"pluginId"`
	} `json:"__inputs"`
}

// The import's datasource input: Grafana asks for it and writes its choice where this is.
const dsInput = "${DS_PROMETHEUS}"

// Every metric a query reads, with its selector: both variables must narrow it.
var selector = regexp.MustCompile(`\bnoderecover_[a-z_]+\b(\{[^}]*\})?`)

// Gauges a standby keeps from the last time it led (or, the watch's silence, never resets): a
// query of one shows the acting replica's only.
var leaderOnly = []string{"noderecover_storm_guard_engaged", "noderecover_tainted_nodes",
	"noderecover_last_successful_pass_timestamp_seconds", "noderecover_etcd_ready_members", "noderecover_nodes{",
	"noderecover_tainted_since_timestamp_seconds", "noderecover_watch_last_event_age_seconds"}

const dsRef = "${datasource}"

var metricName = regexp.MustCompile(`\bnoderecover_[a-z_]+\b`)

func exported(metricsFile string, extra []string) map[string]bool {
	b, err := os.ReadFile(metricsFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "checker:", err)
		os.Exit(2)
	}
	known := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			known[f[2]] = true
			if f[3] == "histogram" {
				for _, s := range []string{"_bucket", "_sum", "_count"} {
					known[f[2]+s] = true
				}
			}
		}
	}
	for _, e := range extra {
		known[e] = true
	}
	if len(known) == 0 {
		fmt.Fprintf(os.Stderr, "checker: no TYPE lines in %s\n", metricsFile)
		os.Exit(2)
	}
	return known
}

func checkDashboard(file, metricsFile string, extra []string) {
	raw, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintln(os.Stderr, "checker:", err)
		os.Exit(2)
	}
	known := exported(metricsFile, extra)

	// the import's __inputs and __requires are not the dashboard's own: the SDK reads the rest
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		finding("%s: not JSON: %v", file, err)
		return
	}
	delete(top, "__inputs")
	delete(top, "__requires")
	own, err := json.Marshal(top)
	if err != nil {
		finding("%s: %v", file, err)
		return
	}
	plugins.RegisterDefaultPlugins()
	var d dashboard.Dashboard
	if err := sdkErr(d.UnmarshalJSONStrict(own)); err != nil {
		finding("%s: not a dashboard the Grafana schema accepts: %v", file, err)
		return
	}
	if err := sdkErr(d.Validate()); err != nil {
		finding("%s: the Grafana schema's validation: %v", file, err)
	}

	var rd rawDashboard
	if err := json.Unmarshal(raw, &rd); err != nil {
		finding("%s: %v", file, err)
		return
	}
	if rd.UID == "" || rd.Title == "" {
		finding("%s: the dashboard needs a uid and a title (uid %q, title %q)", file, rd.UID, rd.Title)
	}
	if len(rd.Inputs) != 1 || rd.Inputs[0].Name != "DS_PROMETHEUS" || rd.Inputs[0].Type != "datasource" || rd.Inputs[0].PluginID != "prometheus" {
		finding("%s: __inputs must be one datasource input DS_PROMETHEUS of plugin prometheus (Grafana asks for it on import): %+v", file, rd.Inputs)
	}
	hasDS, vars := false, map[string]bool{}
	for _, v := range rd.Templating.List {
		vars[v.Name] = true
		if v.Name == "datasource" {
			hasDS = v.Type == "datasource" && v.Query == "prometheus"
			if v.Current == nil || v.Current.Value != dsInput {
				finding("%s: the datasource variable does not start on the import's choice %s", file, dsInput)
			}
		} else if v.Datasource != nil && v.Datasource.UID != dsRef {
			finding("%s: variable %s reads datasource %q, not %s", file, v.Name, v.Datasource.UID, dsRef)
		}
	}
	if !hasDS {
		finding("%s: no variable named datasource of type datasource over prometheus: the datasource must be chosen on import", file)
	}
	for _, n := range []string{"job", "instance"} {
		if !vars[n] {
			finding("%s: no variable %s", file, n)
		}
	}

	ids := map[int]string{}
	type box struct {
		title      string
		x, y, w, h int
	}
	var boxes []box
	queries := 0
	var walk func(p rawPanel)
	walk = func(p rawPanel) {
		name := fmt.Sprintf("panel %q", p.Title)
		if p.Title == "" {
			finding("%s: a %s panel has no title", file, p.Type)
		}
		if p.ID == nil {
			finding("%s: %s has no id", file, name)
		} else if other, dup := ids[*p.ID]; dup {
			finding("%s: %s and panel %q share id %d", file, name, other, *p.ID)
		} else {
			ids[*p.ID] = p.Title
		}
		if p.GridPos == nil || p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X < 0 || p.GridPos.Y < 0 || p.GridPos.X+p.GridPos.W > 24 {
			finding("%s: %s is not placed within the 24 columns: %+v", file, name, p.GridPos)
		} else {
			boxes = append(boxes, box{p.Title, p.GridPos.X, p.GridPos.Y, p.GridPos.W, p.GridPos.H})
		}
		if p.Type != "row" {
			if p.Datasource == nil || p.Datasource.UID != dsRef || p.Datasource.Type != "prometheus" {
				finding("%s: %s does not read the datasource variable (%+v)", file, name, p.Datasource)
			}
			if len(p.Targets) == 0 {
				finding("%s: %s has no query", file, name)
			}
		}
		for _, t := range p.Targets {
			queries++
			if t.RefID == "" || strings.TrimSpace(t.Expr) == "" {
				finding("%s: %s has a query without a refId or an expression", file, name)
			}
			if t.Datasource != nil && t.Datasource.UID != dsRef {
				finding("%s: %s query %s reads datasource %q, not %s", file, name, t.RefID, t.Datasource.UID, dsRef)
			}
			names := metricName.FindAllString(t.Expr, -1)
			if len(names) == 0 {
				finding("%s: %s query %s reads no noderecover metric: %s", file, name, t.RefID, t.Expr)
			}
			for _, m := range selector.FindAllStringSubmatch(t.Expr, -1) {
				if !strings.Contains(m[1], `job=~"$job"`) || !strings.Contains(m[1], `instance=~"$instance"`) {
					finding("%s: %s query %s reads %s without both variables", file, name, t.RefID, m[0])
				}
			}
			for _, g := range leaderOnly {
				if strings.Contains(t.Expr, g) && !strings.Contains(t.Expr, "and on (job, instance) noderecover_leader{") {
					finding("%s: %s query %s reads %s of every replica, a standby's stale one too", file, name, t.RefID, strings.TrimSuffix(g, "{"))
				}
			}
			if strings.Contains(t.Expr, "_timestamp_seconds") {
				never := strings.Contains(t.Expr, "> 0)")
				for _, mp := range p.FieldConfig.Defaults.Mappings {
					if o, ok := mp.Options["-1"]; !ok || mp.Type != "value" || o.Text != "never" {
						never = false
					}
				}
				if !never || len(p.FieldConfig.Defaults.Mappings) == 0 {
					finding("%s: %s query %s shows a timestamp never set (0, -1) as a time, not as never", file, name, t.RefID)
				}
			}
			for _, m := range names {
				if !known[m] {
					finding("%s: %s query %s reads %s, which noderecover does not export", file, name, t.RefID, m)
				}
			}
		}
		for _, c := range p.Panels {
			walk(c)
		}
	}
	for _, p := range rd.Panels {
		walk(p)
	}
	for i := range boxes {
		for j := i + 1; j < len(boxes); j++ {
			a, b := boxes[i], boxes[j]
			if a.x < b.x+b.w && b.x < a.x+a.w && a.y < b.y+b.h && b.y < a.y+a.h {
				finding("%s: panels %q and %q overlap", file, a.title, b.title)
			}
		}
	}
	if len(findings) == 0 {
		fmt.Printf("checker: %s: %d panels, %d queries, schema and layout ok\n", file, len(ids), queries)
	}
}

func readYAML(file string) map[string]any {
	b, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintln(os.Stderr, "checker:", err)
		os.Exit(2)
	}
	var v map[string]any
	if err := yaml.Unmarshal(b, &v); err != nil {
		finding("%s: not YAML: %v", file, err)
		return nil
	}
	return v
}

func checkRules(plainFile, crFile string) {
	plain, cr := readYAML(plainFile), readYAML(crFile)
	if plain == nil || cr == nil {
		return
	}
	if cr["apiVersion"] != "monitoring.coreos.com/v1" || cr["kind"] != "PrometheusRule" {
		finding("%s: apiVersion %v kind %v, want monitoring.coreos.com/v1 PrometheusRule", crFile, cr["apiVersion"], cr["kind"])
	}
	meta, _ := cr["metadata"].(map[string]any)
	if meta == nil || meta["name"] == nil || meta["namespace"] == nil {
		finding("%s: metadata needs a name and a namespace", crFile)
	}
	spec, _ := cr["spec"].(map[string]any)
	if len(plain) != 1 || plain["groups"] == nil {
		finding("%s: a rules file holds groups and nothing else", plainFile)
	}
	if spec == nil || len(spec) != 1 || !reflect.DeepEqual(plain["groups"], spec["groups"]) {
		finding("%s's spec.groups differ from %s's groups: run sh deploy/prometheus/make.sh", crFile, plainFile)
	}
	groups, _ := plain["groups"].([]any)
	alerts := []string{}
	for _, g := range groups {
		gm, _ := g.(map[string]any)
		rules, _ := gm["rules"].([]any)
		for _, r := range rules {
			rm, _ := r.(map[string]any)
			name, ok := rm["alert"].(string)
			if !ok {
				continue
			}
			alerts = append(alerts, name)
			labels, _ := rm["labels"].(map[string]any)
			ann, _ := rm["annotations"].(map[string]any)
			if sev := labels["severity"]; sev != "critical" && sev != "warning" {
				finding("%s: %s has severity %v, want critical or warning", plainFile, name, sev)
			}
			for _, k := range []string{"summary", "description"} {
				if s, _ := ann[k].(string); strings.TrimSpace(s) == "" {
					finding("%s: %s has no %s", plainFile, name, k)
				}
			}
		}
	}
	sort.Strings(alerts)
	if len(alerts) == 0 {
		finding("%s: no alerts", plainFile)
	}
	if len(findings) == 0 {
		fmt.Printf("checker: %s and %s hold the same %d groups; alerts %s\n", plainFile, crFile, len(groups), strings.Join(alerts, " "))
	}
}

func main() {
	switch {
	case len(os.Args) >= 4 && os.Args[1] == "dashboard":
		checkDashboard(os.Args[2], os.Args[3], os.Args[4:])
	case len(os.Args) == 4 && os.Args[1] == "rules":
		checkRules(os.Args[2], os.Args[3])
	default:
		fmt.Fprintln(os.Stderr, "usage: checker dashboard DASHBOARD.json METRICS.txt [EXTRA_METRIC...] | checker rules RULES.yaml PROMETHEUSRULE.yaml")
		os.Exit(2)
	}
	for _, f := range findings {
		fmt.Println("checker:", f)
	}
	if len(findings) > 0 {
		os.Exit(1)
	}
}
