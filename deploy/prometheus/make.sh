#!/bin/sh
# Makes noderecover's alerting rules from their one source, rules.yaml.in: the plain Prometheus
# rules file and the monitoring.coreos.com/v1 PrometheusRule of kube-prometheus-stack, the same
# groups in both. Reads only rules.yaml.in; never contacts a cluster or a Prometheus.
#
#   sh deploy/prometheus/make.sh                      rewrites noderecover.rules.yaml and
#                                                     noderecover.prometheusrule.yaml (defaults)
#   sh deploy/prometheus/make.sh rules|prometheusrule [NAME=VALUE ...]
#                                                     prints one, with parameters set
#
# Parameters (durations as Prometheus writes them: 90s, 5m, 2h; seconds as digits):
#   LEADER_FOR=2m            no replica leading for this long
#   PASS_WINDOW=5m           no good pass in this window (polling: a few 15 s polls and then some)
#   RELIST_SECONDS=1800      with the watch on, no ok pass for this long (relists every ~600 s)
#   PASSES_FOR=2m            ... for this long
#   WATCH_SILENT_SECONDS=180 no watch event or bookmark for this many seconds
#   TAINTED_SECONDS=3600     a node carrying our taint for longer than this
set -eu
here=$(cd "$(dirname "$0")" && pwd)

LEADER_FOR=2m PASS_WINDOW=5m RELIST_SECONDS=1800 PASSES_FOR=2m WATCH_SILENT_SECONDS=180 TAINTED_SECONDS=3600
PARAMS="LEADER_FOR PASS_WINDOW RELIST_SECONDS PASSES_FOR WATCH_SILENT_SECONDS TAINTED_SECONDS"

die() { echo "make.sh: $*" >&2; exit 2; }

# The source's groups, parameters filled in; a parameter left unfilled is an error.
groups() {
	script=
	for p in $PARAMS; do
		eval "v=\$$p"
		script="$script s/@$p@/$v/g;"
	done
	out=$(sed -n '/^groups:/,$p' "$here/rules.yaml.in" | sed "$script")
	case $out in *@[A-Z_]*@*) die "rules.yaml.in names a parameter make.sh does not know: $(printf '%s\n' "$out" | grep -o '@[A-Z_]*@' | head -n 1)" ;; esac
	printf '%s\n' "$out"
}

rules() {
	echo "# noderecover's alerting rules for Prometheus (rule_files:). Made by make.sh from"
	echo "# rules.yaml.in: edit that, then run sh deploy/prometheus/make.sh. Runbook: README.md."
	groups
}

prometheusrule() {
	cat <<'HEAD'
# noderecover's alerting rules as a kube-prometheus-stack PrometheusRule. Made by make.sh from
# rules.yaml.in (the same groups as noderecover.rules.yaml): edit that, then run
# sh deploy/prometheus/make.sh. The Prometheus must select this object: kube-prometheus-stack
# selects PrometheusRules labelled release=<its release name> unless
# prometheus.prometheusSpec.ruleSelectorNilUsesHelmValues is false; change the label to yours.
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: noderecover
  namespace: noderecover
  labels:
    app.kubernetes.io/name: noderecover
    release: kube-prometheus-stack
spec:
HEAD
	groups | sed 's/^./  &/'
}

what=${1:-}
[ $# -gt 0 ] && shift
for kv in "$@"; do
	name=${kv%%=*} value=${kv#*=}
	case " $PARAMS " in *" $name "*) ;; *) die "unknown parameter $name (known: $PARAMS)" ;; esac
	case $value in '' | *[!0-9a-z]*) die "$name=$value: want digits, or a duration such as 90s or 5m" ;; esac
	eval "$name=\$value"
done
case $what in
rules) rules ;;
prometheusrule) prometheusrule ;;
'')
	rules > "$here/noderecover.rules.yaml"
	prometheusrule > "$here/noderecover.prometheusrule.yaml"
	echo "make.sh: wrote deploy/prometheus/noderecover.rules.yaml and noderecover.prometheusrule.yaml" >&2
	;;
*) die "unknown output $what (want rules or prometheusrule)" ;;
esac
