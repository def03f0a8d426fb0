#!/bin/sh
# The monitoring suite: deploy/prometheus's rules and deploy/grafana's dashboard, checked with no
# server running. The rules files are what make.sh makes of rules.yaml.in; promtool (Debian's
# prometheus package; ./build.sh installs it) checks them and runs rules_test.yaml; the Go checker
# (checker/, built on the Grafana Foundation SDK) compares the rules file with the PrometheusRule
# and reads the dashboard strictly. Then each check is run again on a broken copy, in a temporary
# directory, and must fail: a check that passes broken input proves nothing. Writes only the
# checker's binary (under build/) and temporary files; contacts nothing but the Go module proxy
# (the checker's first build).
#
#   sh tests/monitoring/run.sh        ends with "monitoring: N passed, N failed"; exit 1 on a failure
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
prom=$root/deploy/prometheus
dash=$root/deploy/grafana/noderecover.json
# The exposition the binary writes (its golden copy): every metric it exports has a TYPE line.
metrics=$root/tests/unit/metrics/render.txt
# The watch's series (issue 15), which the rules and the dashboard read before the binary has
# them; once it exports them, its golden exposition names them and this list can go.
watch="noderecover_watch_events_total noderecover_relists_total noderecover_watch_restarts_total noderecover_watch_last_event_age_seconds"

passed=0 failed=0
pass() { passed=$((passed + 1)); echo "monitoring: ok: $*"; }
fail() { failed=$((failed + 1)); echo "monitoring: FAIL: $*"; }
# expect 0|1 WHAT COMMAND...: the command's exit status must be 0 (success) or non-zero.
expect() {
	want=$1 what=$2
	shift 2
	out=$("$@" 2>&1)
	rc=$?
	if [ "$want" = 0 ] && [ $rc -eq 0 ]; then
		pass "$what"
	elif [ "$want" = 1 ] && [ $rc -ne 0 ]; then
		pass "$what (fails as it must: $(printf '%s\n' "$out" | grep -v -e '^ *$' -e '^Unit Testing' -e '^Checking' -e 'FAILED:$' | head -n 1 | sed 's/^ *//' | cut -c1-150))"
	else
		fail "$what: exit $rc"
		printf '%s\n' "$out" | head -n 40
	fi
}

command -v promtool >/dev/null 2>&1 || {
	echo "monitoring: promtool not found: install Debian's prometheus package (./build.sh test does)" >&2
	echo "monitoring: 0 passed, 1 failed"
	exit 1
}
[ -x /usr/local/go/bin/go ] && PATH=$PATH:/usr/local/go/bin
if [ -z "${HOME:-}" ]; then
	HOME=$(getent passwd "$(id -u)" | cut -d: -f6)
	export HOME
fi
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}" GOFLAGS="${GOFLAGS:-} -mod=readonly"
work=$(mktemp -d "${TMPDIR:-/tmp}/noderecover-monitoring.XXXXXX")
trap 'rm -rf "$work"' EXIT

# --- the rules: one source, both files made from it, promtool's checks and unit tests ---
sh "$prom/make.sh" rules > "$work/rules.yaml"
sh "$prom/make.sh" prometheusrule > "$work/prometheusrule.yaml"
expect 0 "noderecover.rules.yaml is what make.sh makes of rules.yaml.in" cmp "$work/rules.yaml" "$prom/noderecover.rules.yaml"
expect 0 "noderecover.prometheusrule.yaml is what make.sh makes of rules.yaml.in" cmp "$work/prometheusrule.yaml" "$prom/noderecover.prometheusrule.yaml"
expect 0 "promtool check rules noderecover.rules.yaml" promtool check rules "$prom/noderecover.rules.yaml"
expect 0 "promtool test rules rules_test.yaml (a case that fires and one that stays silent per alert)" \
	promtool test rules "$here/rules_test.yaml"

# rules_test.yaml again, against a broken rules file: a copy of the test two directories under
# $work reads $work/deploy/prometheus/noderecover.rules.yaml, as the original reads the real one.
mkdir -p "$work/t/t" "$work/deploy/prometheus"
cp "$here/rules_test.yaml" "$work/t/t/rules_test.yaml"
cp "$work/rules.yaml" "$work/deploy/prometheus/noderecover.rules.yaml"
broken() { # WHAT: rules_test.yaml must fail on the broken copy
	expect 1 "promtool test rules fails when $1" promtool test rules "$work/t/t/rules_test.yaml"
}
expect 0 "promtool test rules passes on the copy (the broken runs below differ by their break only)" \
	promtool test rules "$work/t/t/rules_test.yaml"
for a in $(sed -n 's/^ *- alert: //p' "$work/rules.yaml"); do
	sed "s/^\( *- alert: \)$a\$/\1${a}Gone/" "$work/rules.yaml" > "$work/deploy/prometheus/noderecover.rules.yaml"
	broken "$a never fires"
done
grep -v '^ *and on (job, instance) noderecover_leader == 1$' "$work/rules.yaml" > "$work/deploy/prometheus/noderecover.rules.yaml"
broken "the rules count a standby replica too"
sh "$prom/make.sh" rules TAINTED_SECONDS=1800 > "$work/deploy/prometheus/noderecover.rules.yaml"
broken "the long-taint threshold is 30 minutes, not an hour"
sh "$prom/make.sh" rules LEADER_FOR=0s > "$work/deploy/prometheus/noderecover.rules.yaml"
broken "a leaderless moment (a handover) alerts at once"
sh "$prom/make.sh" rules WATCH_SILENT_SECONDS=50 > "$work/deploy/prometheus/noderecover.rules.yaml"
broken "a watch with bookmarks every minute counts as silent"
sed '/unless on (job, instance, method, code) noderecover_api_requests_total{method="POST",code="403"}$/d' "$work/rules.yaml" > "$work/deploy/prometheus/noderecover.rules.yaml"
broken "a tolerated 403 (the permission check, an Event: a POST) pages"
sed 's/min_over_time(noderecover_leader\[[0-9]*s\]) == 1$/noderecover_leader == 1/' "$work/rules.yaml" > "$work/deploy/prometheus/noderecover.rules.yaml"
broken "a new leader's silence counted from its start pages at a handover"
for p in DOWN_FOR WATCH_FOR STORM_FOR TAINTED_FOR REFUSED_FOR; do
	sh "$prom/make.sh" rules $p=0s > "$work/deploy/prometheus/noderecover.rules.yaml"
	broken "$p is 0s: a moment pages"
done

# every alert waits (for:) and links its runbook: README.md's heading of its name
linked() { # RULES README: one line per alert that does not, exit 1 if any
	awk -v readme="$2" '
		function check() {
			if (a == "") return
			if (!f) { print a ": no for:"; bad = 1 }
			if (r !~ ("#" tolower(a) "$")) { print a ": runbook_url " r " is not #" tolower(a); bad = 1 }
			found = 0
			while ((getline line < readme) > 0) if (line == "#### " a) found = 1
			close(readme)
			if (!found) { print a ": README.md has no heading \"#### " a "\""; bad = 1 }
		}
		/^ *- alert: / { check(); a = $3; f = 0; r = "" }
		/^ *for: / { f = 1 }
		/^ *runbook_url: / { r = $2 }
		END { check(); exit bad }' "$1"
}
expect 0 "every alert has a for: and a runbook_url to README.md's heading of its name" linked "$prom/noderecover.rules.yaml" "$root/README.md"
awk '/^ *for: / && !done { done = 1; next } { print }' "$work/rules.yaml" > "$work/no-for.yaml"
expect 1 "an alert without for: is found" linked "$work/no-for.yaml" "$root/README.md"
sed '0,/#noderecoverdown$/s//#noderecover-down/' "$work/rules.yaml" > "$work/bad-anchor.yaml"
expect 1 "a runbook_url to another anchor is found" linked "$work/bad-anchor.yaml" "$root/README.md"
expect 0 "the chart's copy of the rules is noderecover.rules.yaml" cmp "$prom/noderecover.rules.yaml" "$root/deploy/helm/noderecover/files/noderecover.rules.yaml"

sed 's/noderecover_leader) == 0$/noderecover_leader) ==/' "$work/rules.yaml" > "$work/bad-syntax.yaml"
expect 1 "promtool check rules fails on an expression cut short" promtool check rules "$work/bad-syntax.yaml"
expect 1 "make.sh refuses an unknown parameter" sh "$prom/make.sh" rules TAINTED=1
expect 1 "make.sh refuses a value that is not a duration" sh "$prom/make.sh" rules 'TAINTED_SECONDS=1/0'

# --- the checker: the PrometheusRule against the rules file, the dashboard's structure ---
checker=$root/build/monitoring/checker
mkdir -p "$(dirname "$checker")"
start=$(date +%s)
if (cd "$here/checker" && go build -o "$checker" .); then
	pass "the checker builds (grafana-foundation-sdk/go; $(( $(date +%s) - start ))s)"
else
	fail "the checker does not build"
	echo "monitoring: $passed passed, $failed failed"
	exit 1
fi
expect 0 "the PrometheusRule holds the rules file's groups" "$checker" rules "$prom/noderecover.rules.yaml" "$prom/noderecover.prometheusrule.yaml"
sed '0,/severity: warning/s//severity: critical/' "$prom/noderecover.prometheusrule.yaml" > "$work/pr-drift.yaml"
expect 1 "the checker finds a PrometheusRule edited apart from the rules file" "$checker" rules "$prom/noderecover.rules.yaml" "$work/pr-drift.yaml"
grep -v '^ *summary:' "$prom/noderecover.rules.yaml" > "$work/no-summary.yaml"
sh "$prom/make.sh" prometheusrule | grep -v '^ *summary:' > "$work/no-summary-pr.yaml"
expect 1 "the checker finds an alert without a summary" "$checker" rules "$work/no-summary.yaml" "$work/no-summary-pr.yaml"

# shellcheck disable=SC2086
expect 0 "the dashboard: strict schema, Validate, datasource variable, layout, metrics exported" "$checker" dashboard "$dash" "$metrics" $watch
mutant() { # WHAT SED: the checker must refuse the dashboard changed by SED (first match only)
	sed "$2" "$dash" > "$work/dash.json"
	if cmp -s "$work/dash.json" "$dash"; then
		fail "the mutation '$2' changed nothing: fix the test"
		return
	fi
	# shellcheck disable=SC2086
	expect 1 "the checker refuses a dashboard with $1" "$checker" dashboard "$work/dash.json" "$metrics" $watch
}
mutant "an unknown panel option" '0,/"legend": {/s//"legnd": {/'
mutant "a panel without its height" '0,/"h": 8/s//"hh": 8/'
mutant "a query without its expression" '0,/"expr": /s//"exp": /'
mutant "a metric noderecover does not export" '0,/noderecover_nodes{/s//noderecover_node{/'
mutant "two panels overlapping" '0,/"w": 12/s//"w": 14/'
mutant "a datasource named, not the variable" '0,/"uid": "${datasource}"/s//"uid": "prom-prod"/'
mutant "no datasource variable" '0,/"query": "prometheus"/s//"query": "loki"/'
mutant "no import input (Grafana would not ask for the datasource)" '0,/"name": "DS_PROMETHEUS"/s//"name": "DS_PROM"/'
mutant "the datasource variable not starting on the import's choice" '0,/"value": "${DS_PROMETHEUS}"/s//"value": "prom-prod"/'
mutant "a query without the instance variable" '0,/,instance=~\\"$instance\\"}/s//}/'
mutant "no instance variable" '0,/"name": "instance"/s//"name": "replica"/'
mutant "the standby's watch silence plotted" 's/\(watch_last_event_age_seconds{[^}]*}\) and on (job, instance) noderecover_leader{[^}]*} == 1/\1/'
mutant "a timestamp never set shown as 56 years" '0,/"text": "never"/s//"text": "56 years"/'

# every query of the dashboard parses as PromQL: as recording rules (the variables as Grafana
# fills them), checked by promtool
python3 - "$dash" > "$work/dash-queries.yaml" <<'PY'
import json, sys
def panels(ps):
    for p in ps:
        yield p
        yield from panels(p.get("panels", []))
print("groups:\n  - name: dashboard\n    rules:")
for p in panels(json.load(open(sys.argv[1]))["panels"]):
    for t in p.get("targets", []):
        q = t["expr"].replace("$job", ".*").replace("$instance", ".*").replace("$__rate_interval", "1m")
        print("      - record: dashboard:%d:%s\n        expr: %s" % (p["id"], t["refId"], json.dumps(q)))
PY
expect 0 "every dashboard query parses as PromQL (promtool check rules)" promtool check rules "$work/dash-queries.yaml"
sed 's/== 1)"$/== )"/' "$work/dash-queries.yaml" > "$work/dash-queries-bad.yaml"
expect 1 "a dashboard query cut short does not parse" promtool check rules "$work/dash-queries-bad.yaml"

echo "monitoring: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
