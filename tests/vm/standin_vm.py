"""The stand-in API server for the VM test (tests/vm/run.sh): tests/standin/apiserver.py's
StandIn with the little the fence agent asks besides what the watcher asks, added here rather
than in apiserver.py (the agent's own tests extend that file):

- GET /readyz, /livez, /healthz: 200 "ok" to an authenticated client (the agent's API check);
- a list of Leases in a namespace with a labelSelector key=value (the agent's peers);
- a JSON patch (RFC 6902) of a Lease, with its resourceVersion test as kube-apiserver applies it.

Each is used only when StandIn does not answer it itself (a 404 or 405 from it), so the day
apiserver.py serves them, its answer wins.

    python3 standin_vm.py --make-certs CERTDIR     the certificates, once
    python3 standin_vm.py CERTDIR TOKEN PORT_FILE  the server

listens on 127.0.0.1 (a random port: qemu's user network maps the guest's 10.0.2.2:PORT to it),
writes its port to PORT_FILE once it listens, prints one line per Lease write (LEASE WRITE name
resourceVersion renewTime annotations...) and per request answered (REQ method path status),
flushed, and stops on SIGTERM or after --seconds (default 600): it never outlives its test.
"""
import copy
import json
import os
import signal
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "standin"))

from apiserver import LEASES, Reply, StandIn, PatchError, apply_patch, status_body  # noqa: E402

HEALTH = ("/readyz", "/livez", "/healthz")


def say(*words):
    print(" ".join(str(w) for w in words), flush=True)


class FenceStandIn(StandIn):
    def _handle_locked(self, req):
        rep = StandIn._handle_locked(self, req)
        if rep.status in (404, 405) and self._auth(req):
            mine = self._fence_extra(req)
            if mine is not None:
                rep = mine
        if req.path.startswith(LEASES) and req.method in ("POST", "PUT", "PATCH") and rep.status in (200, 201):
            self._said_lease(rep)
        say("REQ", req.method, req.target, rep.status)
        return rep

    def _said_lease(self, rep):
        try:
            obj = rep.body if isinstance(rep.body, dict) else json.loads(rep.body)
        except (TypeError, ValueError):
            return
        md, spec = obj.get("metadata") or {}, obj.get("spec") or {}
        ann = " ".join("%s=%s" % kv for kv in sorted((md.get("annotations") or {}).items()))
        say("LEASE WRITE", md.get("name"), md.get("resourceVersion"), spec.get("renewTime"), ann)

    def _fence_extra(self, req):
        if req.path in HEALTH and req.method == "GET":
            return Reply(200, b"ok", content_type="text/plain; charset=utf-8")
        if not req.path.startswith(LEASES):
            return None
        parts = req.path[len(LEASES):].split("/")
        if len(parts) == 2 and parts[1] == "leases" and req.method == "GET":
            return self._lease_list(parts[0], req.qdict().get("labelSelector", ""))
        if len(parts) == 3 and parts[1] == "leases" and parts[2] and req.method == "PATCH":
            return self._lease_patch(req, parts[0], parts[2])
        return None

    def _lease_list(self, ns, selector):
        want = {}
        for term in filter(None, selector.split(",")):
            if "=" not in term:
                return Reply(400, status_body(400, "BadRequest", "unable to parse requirement: %r" % term))
            k, v = term.split("=", 1)
            want[k.rstrip("=")] = v
        items = []
        for (lns, _), lease in sorted(self.leases.items()):
            labels = lease["metadata"].get("labels") or {}
            if lns == ns and all(labels.get(k) == v for k, v in want.items()):
                item = copy.deepcopy(lease)
                item.pop("kind", None)
                item.pop("apiVersion", None)
                items.append(item)
        return Reply(200, {"kind": "LeaseList", "apiVersion": "coordination.k8s.io/v1",
                           "metadata": {"resourceVersion": str(self.rv)}, "items": items})

    def _lease_patch(self, req, ns, name):
        ct = (req.header("Content-Type") or "").split(";")[0].strip().lower()
        if ct != "application/json-patch+json":
            return Reply(415, status_body(415, "UnsupportedMediaType", '415: Unsupported Media Type: "%s"' % ct))
        cur = self.leases.get((ns, name))
        if cur is None:
            return Reply(404, status_body(404, "NotFound", 'leases.coordination.k8s.io "%s" not found' % name,
                                          {"name": name, "group": "coordination.k8s.io", "kind": "leases"}))
        try:
            ops = json.loads(req.body.decode("utf-8"))
            out = apply_patch(copy.deepcopy(cur), ops)
        except (ValueError, UnicodeDecodeError, PatchError) as e:
            # a failed "test" is 422 in kube-apiserver (the resourceVersion guard)
            return Reply(422, status_body(422, "Invalid", "the server rejected our request due to an error in our "
                                          "request: %s" % e))
        self.rv += 1
        out["metadata"]["resourceVersion"] = str(self.rv)
        out["metadata"]["uid"] = cur["metadata"]["uid"]
        self.leases[(ns, name)] = out
        return Reply(200, copy.deepcopy(out))


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
