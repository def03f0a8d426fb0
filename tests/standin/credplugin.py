"""A stand-in exec credential plugin (client.authentication.k8s.io ExecCredential), run by
noderecover as kubectl would run EKS's or GKE's: `python3 credplugin.py MODE`.

It notes each run (its arguments, KUBERNETES_EXEC_INFO, PLUGIN_* variables, what stdin held,
whether stdin is a terminal, what its open descriptors are) as one JSON line in $PLUGIN_STATE/runs, then, by MODE:
  token    prints a token: the n-th of $PLUGIN_TOKENS (comma-separated; the last one repeats),
           expiring $PLUGIN_EXPIRE_IN seconds from now when that is set
  cert     prints $PLUGIN_CERT and $PLUGIN_KEY (files) as clientCertificateData/clientKeyData
  hang     starts a child that sleeps (its pid in $PLUGIN_STATE/child) and sleeps itself
  garbled  prints an ExecCredential cut off in the middle of its token
  fail     says why on stderr (two lines) and exits 3
$PLUGIN_MODES (comma-separated, the last one repeats) gives each run its MODE; $PLUGIN_API
overrides the apiVersion printed; $PLUGIN_STDERR is written to stderr first.
"""
import datetime
import json
import os
import subprocess
import sys
import time

state = os.environ["PLUGIN_STATE"]
mode = sys.argv[1] if len(sys.argv) > 1 else "token"
runs_path = os.path.join(state, "runs")
try:
    with open(runs_path) as f:
        n = sum(1 for _ in f)
except OSError:
    n = 0
if os.environ.get("PLUGIN_MODES"):
    # the n-th run's mode (comma-separated; the last one repeats), over MODE
    modes = os.environ["PLUGIN_MODES"].split(",")
    mode = modes[min(n, len(modes) - 1)]
stdin = sys.stdin.read() if sys.stdin else None
with open(runs_path, "a") as f:
    f.write(json.dumps({"argv": sys.argv[1:], "info": os.environ.get("KUBERNETES_EXEC_INFO"),
                        "env": {k: v for k, v in os.environ.items() if k.startswith("PLUGIN_")},
                        "stdin": stdin, "tty": os.isatty(0), "pgid_is_pid": os.getpgid(0) == os.getpid(),
                        "fds": sorted(os.readlink("/proc/self/fd/" + fd) for fd in os.listdir("/proc/self/fd")
                                      if os.path.exists("/proc/self/fd/" + fd))}) + "\n")

info = json.loads(os.environ.get("KUBERNETES_EXEC_INFO") or "{}")
api = os.environ.get("PLUGIN_API") or info.get("apiVersion") or "client.authentication.k8s.io/v1"
if os.environ.get("PLUGIN_STDERR"):
    sys.stderr.write(os.environ["PLUGIN_STDERR"] + "\n")
    sys.stderr.flush()

tokens = (os.environ.get("PLUGIN_TOKENS") or "").split(",")
token = tokens[min(n, len(tokens) - 1)]
status = {}
if mode == "token":
    status["token"] = token
elif mode == "cert":
    with open(os.environ["PLUGIN_CERT"]) as c, open(os.environ["PLUGIN_KEY"]) as k:
        status["clientCertificateData"] = c.read()
        status["clientKeyData"] = k.read()
elif mode == "hang":
    child = subprocess.Popen(["sleep", "300"])
    with open(os.path.join(state, "child"), "w") as f:
        f.write(str(child.pid))
    time.sleep(300)
elif mode == "garbled":
    sys.stdout.write('{"kind":"ExecCredential","apiVersion":"%s","status":{"token":"%s' % (api, token[:len(token) // 2 + 4]))
    sys.exit(0)
elif mode == "fail":
    sys.stderr.write("error: the session expired; run login again\nsecond line\n")
    sys.exit(3)
if os.environ.get("PLUGIN_EXPIRE_IN"):
    when = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=int(os.environ["PLUGIN_EXPIRE_IN"]))
    status["expirationTimestamp"] = when.strftime("%Y-%m-%dT%H:%M:%SZ")
json.dump({"kind": "ExecCredential", "apiVersion": api, "spec": {}, "status": status}, sys.stdout)
