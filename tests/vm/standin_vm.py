"""The stand-in API server for the VM test (tests/vm/run.sh): tests/standin/apiserver.py's
StandIn as it is (it serves what the fence agent asks: GET /readyz, its Lease's create, read,
renewal and JSON patch, the list of the fence Leases by label), run as a process of its own,
with a certificate for the address the guest dials (10.0.2.2) and one line per request and per
Lease write for run.sh to read.

    python3 standin_vm.py --make-certs CERTDIR     the certificates, once
    python3 standin_vm.py CERTDIR TOKEN PORT_FILE  the server

listens on 127.0.0.1 (a random port: qemu's user network maps the guest's 10.0.2.2:PORT to it),
writes its port to PORT_FILE once it listens, prints one line per Lease write (LEASE WRITE name
resourceVersion renewTime annotations...) and per request answered (REQ method target status),
flushed, and stops on SIGTERM or after --seconds (default 600): it never outlives its test.
"""
import json
import os
import signal
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "standin"))

from apiserver import LEASES, StandIn  # noqa: E402


def say(*words):
    print(" ".join(str(w) for w in words), flush=True)


class FenceStandIn(StandIn):
    def _handle_locked(self, req):
        rep = StandIn._handle_locked(self, req)
        if req.path.startswith(LEASES) and req.method in ("POST", "PUT", "PATCH") and rep.status in (200, 201):
            self._said_lease(rep)
        say("REQ", req.method, req.target, rep.status)
        return rep

    def _said_lease(self, rep):
        try:
            obj = json.loads(rep.body)
        except (TypeError, ValueError):
            return
        md, spec = obj.get("metadata") or {}, obj.get("spec") or {}
        ann = " ".join("%s=%s" % kv for kv in sorted((md.get("annotations") or {}).items()))
        say("LEASE WRITE", md.get("name"), md.get("resourceVersion"), spec.get("renewTime"), ann)


def make_certs(d):
    """The stand-in's certificates (tests/standin/certs.py) and vm.crt/.key for the address the
    guest dials, IP:10.0.2.2 (qemu's user network's name for the host)."""
    import certs
    certs.make_certs(d)
    certs._leaf(d, "vm", "ca", "/O=standin/CN=kube-apiserver", "IP:10.0.2.2", "serverAuth")


def main():
    import argparse
    if len(sys.argv) == 3 and sys.argv[1] == "--make-certs":
        make_certs(sys.argv[2])
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("certdir")
    ap.add_argument("token")
    ap.add_argument("port_file")
    ap.add_argument("--seconds", type=float, default=600, help="stop after this long whatever happens")
    a = ap.parse_args()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    srv = FenceStandIn(a.certdir, cert="vm", token=a.token).start()
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % srv.port)
    os.rename(tmp, a.port_file)
    say("LISTEN", srv.url)
    stop.wait(a.seconds)
    srv.stop()
    say("STOPPED", "%.1f" % time.monotonic())


if __name__ == "__main__":
    main()
