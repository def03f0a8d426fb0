#!/bin/sh
# The Helm suite: deploy/helm/noderecover against `noderecover manifests` (test_chart.py says
# what is checked), then the chart on the e2e suite's real control plane: two releases
# installed, tested, upgraded and uninstalled side by side (tests/e2e/helm_test.go, TestHelm),
# and the READMEs' Helm commands run as written (readme_test.go, TestReadmeHelm, with the
# control plane's kubectl); skipped with NODERECOVER_SKIP_E2E=1. build.sh helm runs it after
# packing the chart into build/dist:
#   tests/helm/run.sh BINARY OTHER_IMAGE_BINARY VERSION IMAGE
# The helm CLI, and the control plane with kubectl (whose `kubectl kustomize` test_chart.py
# uses), come from tests/e2e/build-tools.sh: built the first time, cached outside the
# checkout (with NODERECOVER_SKIP_E2E=1 the control plane is not built and the kustomize test is
# skipped, unless NODERECOVER_KUBECTL names a kubectl). Installs Debian's python3-yaml when
# missing; never writes into the repository (the test's files go to temporary directories). Its
# lines "helm: N passed, N failed, N skipped" and "e2e: N passed, N failed" count it; exit 1
# when either failed.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
abs() { case $1 in /*) echo "$1" ;; *) echo "$(pwd)/$1" ;; esac; }
NODERECOVER_BINARY=$(abs "$1")
NODERECOVER_OTHER_IMAGE_BIN=$(abs "$2")
NODERECOVER_VERSION=$3
NODERECOVER_IMAGE=$4
if ! python3 -c 'import yaml' 2>/dev/null; then
	echo "installing python3-yaml" >&2
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-yaml >/dev/null
fi
tools=$here/../e2e/build-tools.sh
t0=$(date +%s)
NODERECOVER_HELM=$(sh "$tools" helm) ||
	{ echo "helm: no helm CLI: tests/e2e/build-tools.sh helm failed (its words above)" >&2; exit 1; }
echo "helm CLI ready in $(($(date +%s) - t0)) s: $NODERECOVER_HELM"
if [ "${NODERECOVER_SKIP_E2E:-}" != 1 ] && [ -z "${NODERECOVER_KUBECTL:-}" ]; then
	t0=$(date +%s)
	NODERECOVER_KUBECTL=$(sh "$tools" control-plane)/kubectl ||
		{ echo "helm: no kubectl: tests/e2e/build-tools.sh control-plane failed (its words above)" >&2; exit 1; }
	echo "control plane and kubectl ready in $(($(date +%s) - t0)) s: $NODERECOVER_KUBECTL"
	# NODERECOVER_E2E_BINDIR may name a control plane without kubectl: its tests skip, saying so
	[ -x "$NODERECOVER_KUBECTL" ] || { echo "helm: no kubectl at $NODERECOVER_KUBECTL" >&2; NODERECOVER_KUBECTL=; }
fi
export NODERECOVER_BINARY NODERECOVER_OTHER_IMAGE_BIN NODERECOVER_VERSION NODERECOVER_IMAGE NODERECOVER_HELM NODERECOVER_KUBECTL
rc=0
python3 "$here/test_chart.py" || rc=1
if [ "${NODERECOVER_SKIP_E2E:-}" = 1 ]; then
	echo "helm: not installing on the control plane (NODERECOVER_SKIP_E2E=1)"
else
	NODERECOVER_E2E_RUN='^(TestHelm|TestReadmeHelm)$' sh "$here/../e2e/run.sh" "$NODERECOVER_BINARY" || rc=1
fi
exit $rc
