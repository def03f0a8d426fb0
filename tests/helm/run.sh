#!/bin/sh
# The Helm suite: deploy/helm/noderecover against `noderecover manifests` (test_chart.py says
# what is checked), then the chart on the e2e suite's real control plane: two releases
# installed, tested, upgraded and uninstalled side by side (tests/e2e/helm_test.go, TestHelm),
# and the READMEs' Helm commands run as written (readme_test.go, TestReadmeHelm, with kubectl
# built by build-kubectl.sh); skipped with NODERECOVER_SKIP_E2E=1. build.sh helm runs it after packing the chart into build/dist:
#   tests/helm/run.sh BINARY OTHER_IMAGE_BINARY VERSION IMAGE
# Builds the helm and kustomize CLIs the first time (build-helm.sh, build-kustomize.sh: cached
# outside the checkout), installs Debian's python3-yaml when missing; never writes into the
# repository (the test's files go to temporary directories). Its lines "helm: N passed, N
# failed, N skipped" and "e2e: N passed, N failed" count it; exit 1 when either failed.
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
t0=$(date +%s)
NODERECOVER_HELM=$(sh "$here/build-helm.sh" | tail -n 1)
echo "helm CLI ready in $(($(date +%s) - t0)) s: $NODERECOVER_HELM"
t0=$(date +%s)
NODERECOVER_KUSTOMIZE=$(sh "$here/build-kustomize.sh" | tail -n 1)
echo "kustomize CLI ready in $(($(date +%s) - t0)) s: $NODERECOVER_KUSTOMIZE"
export NODERECOVER_BINARY NODERECOVER_OTHER_IMAGE_BIN NODERECOVER_VERSION NODERECOVER_IMAGE NODERECOVER_HELM NODERECOVER_KUSTOMIZE
rc=0
python3 "$here/test_chart.py" || rc=1
if [ "${NODERECOVER_SKIP_E2E:-}" = 1 ]; then
	echo "helm: not installing on the control plane (NODERECOVER_SKIP_E2E=1)"
else
	t0=$(date +%s)
	NODERECOVER_KUBECTL=$(sh "$here/build-kubectl.sh" | tail -n 1)
	echo "kubectl ready in $(($(date +%s) - t0)) s: $NODERECOVER_KUBECTL"
	export NODERECOVER_KUBECTL
	NODERECOVER_E2E_RUN='^(TestHelm|TestReadmeHelm)$' sh "$here/../e2e/run.sh" "$NODERECOVER_BINARY" || rc=1
fi
exit $rc
