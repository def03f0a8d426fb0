#!/bin/sh
# Runs the stand-in API server tests against a noderecover binary.
#   tests/standin/run.sh [BINARY] [-k NAME_SUBSTRING]... [test_module...]
# Last line: "standin: N passed, N failed". Exit status non-zero when any test failed.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin=$here/../../build/noderecover
case "${1:-}" in
    ""|-*|test_*) ;;
    *) bin=$1; shift ;;
esac
case "$bin" in
    /*) ;;
    *) bin=$(pwd)/$bin ;;
esac
NODERECOVER_BINARY=$bin
export NODERECOVER_BINARY
exec python3 "$here/runner.py" "$@"
