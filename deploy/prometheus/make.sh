#!/bin/sh
# Makes noderecover's alerting rules from their one source, rules.yaml.in: the plain Prometheus
# rules file and the monitoring.coreos.com/v1 PrometheusRule of kube-prometheus-stack, the same
# groups in both, and the Helm chart's copy of the rules file (its prometheusRule.enabled).
# Reads only rules.yaml.in; never contacts a cluster or a Prometheus.
#
#   sh deploy/prometheus/make.sh                      rewrites noderecover.rules.yaml,
#                                                     noderecover.prometheusrule.yaml and
#                                                     ../helm/noderecover/files/noderecover.rules.yaml
#   sh deploy/prometheus/make.sh rules|prometheusrule [NAME=VALUE ...]
#                                                     prints one, with parameters set
#
# Parameters (durations as Prometheus writes them: 90s, 5m, 2h; seconds as digits):
#   JOB=noderecover          the scrape job of the replicas (the chart's monitors: the pods'
#                            app.kubernetes.io/name); NoderecoverDown asks for its up series
#   DOWN_FOR=5m              no replica up for this long
#   LEADER_FOR=2m            no replica leading for this long
#   PASS_WINDOW=5m           no good pass in this window (a pass every 15 s poll, and then some)
#   PASSES_FOR=2m            ... for this long
#   WATCH_SILENT_SECONDS=180 no watch event or bookmark for this many seconds, while leading
#   WATCH_FOR=1m             ... for this long
#   STORM_FOR=1m             the storm guard holding for this long
#   TAINTED_SECONDS=3600     a node carrying our taint for longer than this
#   TAINTED_FOR=1m           ... for this long
#   REFUSED_FOR=1m           a 401 or 403 in the last 10 minutes, for this long
#   RUNBOOK_URL=https://github.com/exadev/noderecover/blob/main/README.md
#                            where the runbook is: each alert links RUNBOOK_URL#its-name-in-lower-case
set -eu
here=$(cd "$(dirname "$0")" && pwd)

JOB=noderecover DOWN_FOR=5m LEADER_FOR=2m PASS_WINDOW=5m PASSES_FOR=2m WATCH_SILENT_SECONDS=180 WATCH_FOR=1m STORM_FOR=1m
TAINTED_SECONDS=3600 TAINTED_FOR=1m REFUSED_FOR=1m RUNBOOK_URL=https://github.com/exadev/noderecover/blob/main/README.md
PARAMS="JOB DOWN_FOR LEADER_FOR PASS_WINDOW PASSES_FOR WATCH_SILENT_SECONDS WATCH_FOR STORM_FOR TAINTED_SECONDS TAINTED_FOR REFUSED_FOR RUNBOOK_URL"

die() { echo "make.sh: $*" >&2; exit 2; }

# The source's groups, parameters filled in; a parameter left unfilled is an error.
groups() {
	script=
	for p in $PARAMS; do
		eval "v=\$$p"
		script="$script s|@$p@|$v|g;"
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
	case $name in
	RUNBOOK_URL) case $value in https://* | http://*) ;; *) die "$name=$value: want an http(s) URL" ;; esac
		case $value in *[!A-Za-z0-9:/._~%+-]*) die "$name=$value: a character a URL here may not hold" ;; esac ;;
	JOB) case $value in '' | *[!A-Za-z0-9:/._-]*) die "$name=$value: want a job name ([A-Za-z0-9:/._-])" ;; esac ;;
	*) case $value in '' | *[!0-9a-z]*) die "$name=$value: want digits, or a duration such as 90s or 5m" ;; esac ;;
	esac
	eval "$name=\$value"
done
case $what in
rules) rules ;;
prometheusrule) prometheusrule ;;
'')
	rules > "$here/noderecover.rules.yaml"
	prometheusrule > "$here/noderecover.prometheusrule.yaml"
	cp "$here/noderecover.rules.yaml" "$here/../helm/noderecover/files/noderecover.rules.yaml"
	echo "make.sh: wrote deploy/prometheus/noderecover.rules.yaml, noderecover.prometheusrule.yaml and deploy/helm/noderecover/files/noderecover.rules.yaml" >&2
	;;
*) die "unknown output $what (want rules or prometheusrule)" ;;
esac
