#!/usr/bin/env python3
"""A one-minute look at noderecover: the watcher, run for real against the stand-in API
server, with a small simulated k3s cluster (three servers, two removable agents) in which
agents stop reporting. You see an agent tainted (and the Event on it), cleared when it returns,
another pruned, and at the end what a Prometheus scrape of its /metrics says.

    ./build.sh demo            (or: python3 demo/demo.py build/noderecover)

Everything stays on 127.0.0.1; it stops by itself.
"""
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "standin"))

from apiserver import StandIn  # noqa: E402
from certs import make_certs  # noqa: E402
import fixtures  # noqa: E402

TAINT_AFTER = 6
PRUNE_AFTER = 25
POLL = 2


def say(text):
    sys.stderr.write("\033[1m  demo: %s\033[0m\n" % text if sys.stderr.isatty() else "  demo: %s\n" % text)
    sys.stderr.flush()


def set_ready(srv, name, status):
    """What the node lifecycle controller does when a kubelet goes silent or comes back."""
    def mutate(n):
        for c in n["status"]["conditions"]:
            if c["type"] == "Ready":
                c["status"] = status
                c["lastTransitionTime"] = fixtures.rfc3339(0)
                c["reason"] = "NodeStatusUnknown" if status == "Unknown" else "KubeletReady"
    srv.touch(name, mutate)


def state(srv, name):
    n = srv.node(name)
    if n is None:
        return "deleted"
    taints = [t["key"] + "=" + t.get("value", "") + ":" + t["effect"] for t in n["spec"].get("taints", [])]
    ready = [c["status"] for c in n["status"]["conditions"] if c["type"] == "Ready"][0]
    return "Ready=%s taints=%s" % (ready, ",".join(taints) or "none")


def events(srv, name):
    """The Events noderecover posted about a node, as `kubectl get events` would list them."""
    got = [e for e in srv.posted if e["regarding"]["name"] == name]
    return "; ".join("%s %s: %s" % (e["type"], e["reason"], e["note"]) for e in got) or "none"


def free_port():
    with socket.socket() as sk:
        sk.bind(("127.0.0.1", 0))
        return sk.getsockname()[1]


def scrape(port):
    """What Prometheus would read from noderecover's /metrics: the lines about what it did."""
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5) as r:
        text = r.read().decode()
    keep = ("noderecover_actions_total", "noderecover_passes_total", "noderecover_nodes{")
    return [ln for ln in text.splitlines() if ln.startswith(keep) and not ln.endswith(" 0")]


def main():
    binary = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/noderecover")
    removable = {fixtures.DEFAULT_PRUNE_LABEL: "true"}
    nodes = fixtures.etcd_servers(3) + [
        fixtures.node("agent-1", labels=removable),
        fixtures.node("agent-2", labels=removable),
    ]
    with tempfile.TemporaryDirectory(prefix="noderecover-demo-") as d:
        make_certs(d)
        srv = StandIn(d, nodes=nodes).start()
        say("a stand-in API server at %s holds 3 k3s servers (etcd members) and 2 agents labelled %s=true"
            % (srv.url, fixtures.DEFAULT_PRUNE_LABEL))
        say("starting noderecover: taint after %ds Unknown, prune after %ds, poll every %ds"
            % (TAINT_AFTER, PRUNE_AFTER, POLL))
        port = free_port()
        say("its /metrics, /livez and /readyz on http://127.0.0.1:%d (--listen)" % port)
        watcher = subprocess.Popen([
            binary, "run", "--listen", "127.0.0.1:%d" % port, "--server", srv.url, "--ca-file", os.path.join(d, "ca.crt"),
            "--token-file", srv.token_file, "--self-node", "server-0",
            "--taint-after", str(TAINT_AFTER), "--prune-after", str(PRUNE_AFTER), "--poll", str(POLL)])
        try:
            script = [
                (2, lambda: (set_ready(srv, "agent-1", "Unknown"),
                             say("agent-1 stopped reporting: its Ready condition is now Unknown"))),
                (2 + TAINT_AFTER + POLL + 2, lambda: (say("agent-1: " + state(srv, "agent-1")),
                                                      say("Events about agent-1 in namespace default: " + events(srv, "agent-1")))),
                (16, lambda: (set_ready(srv, "agent-1", "True"),
                              say("agent-1 is back: Ready True"))),
                (16 + POLL + 2, lambda: say("agent-1: " + state(srv, "agent-1"))),
                (22, lambda: (set_ready(srv, "agent-2", "Unknown"),
                              say("agent-2 stopped reporting and stays gone"))),
                (22 + PRUNE_AFTER + POLL + 2, lambda: say("agent-2: " + state(srv, "agent-2"))),
            ]
            start = time.monotonic()
            for at, step in script:
                time.sleep(max(0, start + at - time.monotonic()))
                if watcher.poll() is not None:
                    say("the watcher exited early with status %d" % watcher.returncode)
                    return 1
                step()
            say("a scrape of /metrics (its lines about passes, actions and nodes that are not 0):")
            for ln in scrape(port):
                say("  " + ln)
            ok = (srv.node("agent-2") is None and "out-of-service" not in state(srv, "agent-1")
                  and all(srv.node("server-%d" % i) for i in range(3)))
            say("done: agent-1 recovered and untainted, agent-2 pruned, the servers untouched" if ok
                else "unexpected end state: agent-1 %s, agent-2 %s" % (state(srv, "agent-1"), state(srv, "agent-2")))
            return 0 if ok else 1
        finally:
            watcher.terminate()
            watcher.wait(timeout=20)
            srv.stop()


if __name__ == "__main__":
    sys.exit(main())
