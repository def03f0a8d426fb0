"""The fence agent (`noderecover fence`, docs/fence.md) against the stand-in API server.

The agent runs with short settings (a check every second, fence after 2 s, isolated after
2 s, renew every 3 s) and the exec action, whose program records the node it was given in a
file: a fence is that file. Its peers are small Python servers that sign as the contract says
(or with another secret), its kubelet a tiny local HTTP server whose status the test sets. The
API server is cut by a rule that closes every connection without a byte of answer. The
must-fail tests are the ones where fencing would be the bug: a control-plane outage the peers
report, a request while the kubelet is healthy.
"""
import hashlib
import hmac
import http.server
import json
import os
import socket
import threading
import time
import urllib.error
import urllib.request

from apiserver import Fault, Reply, status_body
from harness import BINARY, MODEL, Case

NS = "fence"
SECRET = b"fence-peer-secret-0123456789"
PREFIX = "noderecover-fence-"
ADDR = "noderecover.io/fence-address"
SAFE = "noderecover.io/fence-safe-seconds"
ACTION = "noderecover.io/fence-action"
FENCING = "noderecover.io/fencing"
REQUEST = "noderecover.io/fence-request"
LABEL = ("app.kubernetes.io/component", "fence-agent")
TOKEN_2 = "second-agent-token-0123456789abcdef"
# check 1 s, fence after 2 s, isolated after 2 s, renew 3 s, exec bound 2 s, and the margin for
# a check of up to 7 s, asking at most 8 peers in one batch (fence_rules.h: 2 x 7 + 7 + 7 + 1):
# S = 3+2+2+2+29
SAFE_S = 38


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def sign(*parts):
    return hmac.new(SECRET, "\n".join(parts).encode(), hashlib.sha256).hexdigest()


class _Quiet(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass


class _Server(http.server.ThreadingHTTPServer):
    request_queue_size = 1024   # a batch of 256 requests at once from one agent


def serve(handler):
    """A local HTTP server on a free port in a thread; returns (server, port)."""
    srv = _Server(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, srv.server_address[1]


def peer_handler(api, requested, secret=SECRET, seen=None):
    """A peer as the contract writes it: checks the request's signature, answers signed."""
    class H(_Quiet):
        def do_GET(self):
            q = dict(p.split("=", 1) for p in self.path.split("?", 1)[1].split("&")) if "?" in self.path else {}
            node, nonce = q.get("node", ""), q.get("nonce", "")
            want = "NoderecoverPeer " + hmac.new(secret, ("req\n%s\n%s" % (node, nonce)).encode(), hashlib.sha256).hexdigest()
            if seen is not None:
                seen.append((node, self.headers.get("Authorization") == want))
            if self.headers.get("Authorization") != want:
                self.send_response(401)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = json.dumps({"api": api, "requested": api and requested}, separators=(",", ":")).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("X-Noderecover-Peer", hmac.new(secret, b"resp\n" + nonce.encode() + b"\n" + body,
                                                            hashlib.sha256).hexdigest())
            self.end_headers()
            self.wfile.write(body)
    return H


class FenceAgent(Case):
    def setUp(self):
        super().setUp()
        if MODEL:
            self.skipTest("the Python model has no fence agent")
        self.cut = False
        self.kubelet_status = 200
        self.secret = os.path.join(self.tmp, "secret")
        with open(self.secret, "wb") as f:
            f.write(SECRET)
        self.fenced = os.path.join(self.tmp, "fenced")
        self.script = os.path.join(self.tmp, "fence.sh")
        with open(self.script, "w") as f:
            f.write("#!/bin/sh\necho \"$1\" >> '%s'\n" % self.fenced)
        os.chmod(self.script, 0o755)
        self.port = free_port()

    def start_server(self):
        # a second agent has a token of its own, so that the cut can spare it
        srv = self.server([], tokens=[TOKEN_2])
        srv.on(lambda req: Fault("close_no_reply") if self.cut and req.header("Authorization") != "Bearer " + TOKEN_2
               else None, times=None)
        return srv

    def kubelet(self):
        test = self

        class H(_Quiet):
            def do_GET(self):
                body = b"ok" if test.kubelet_status == 200 else b"not ok"
                self.send_response(test.kubelet_status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
        srv, port = serve(H)
        self.addCleanup(srv.shutdown)
        return "http://127.0.0.1:%d/healthz" % port

    def agent(self, node="n1", after=2, kubelet="", extra=(), port=None, token=None):
        """Starts `noderecover fence` for node; returns (Popen, errpath)."""
        port = port or self.port
        if token:
            extra = list(extra) + ["--token-file", token]
        a = ["--fence-namespace", NS, "--fence-peer-secret-file", self.secret,
             "--fence-listen", "127.0.0.1:%d" % port, "--fence-address", "127.0.0.1:%d" % port,
             "--fence-check", "1s", "--fence-after", "%ds" % after, "--fence-isolated-after", "2s",
             "--fence-renew", "3s", "--fence-action", "exec", "--fence-exec", self.script,
             "--fence-exec-timeout", "2s", "--fence-kubelet-url", kubelet] + list(extra)
        return self.start("fence", extra=a, taint_after=None, self_node=node)

    def log(self, errp):
        with open(errp, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def lease(self, node="n1"):
        return self.srv.lease(NS, PREFIX + node)

    def put_lease(self, node, annotations):
        """A Lease as another agent (or a test) wrote it, straight into the stand-in."""
        with self.srv.lock:
            self.srv.rv += 1
            self.srv.leases[(NS, PREFIX + node)] = {
                "kind": "Lease", "apiVersion": "coordination.k8s.io/v1",
                "metadata": {"name": PREFIX + node, "namespace": NS, "uid": "u-" + node,
                             "resourceVersion": str(self.srv.rv), "labels": {LABEL[0]: LABEL[1]},
                             "annotations": dict(annotations)},
                "spec": {"holderIdentity": node, "leaseDurationSeconds": SAFE_S}}

    def annotate(self, node, key, value):
        """The watcher's write of one annotation, the resourceVersion bumped."""
        with self.srv.lock:
            le = self.srv.leases[(NS, PREFIX + node)]
            le["metadata"].setdefault("annotations", {})[key] = value
            self.srv.rv += 1
            le["metadata"]["resourceVersion"] = str(self.srv.rv)

    def peer(self, node, api, requested=False, secret=SECRET, seen=None):
        srv, port = serve(peer_handler(api, requested, secret, seen))
        self.addCleanup(srv.shutdown)
        self.put_lease(node, {ADDR: "127.0.0.1:%d" % port})

    def armed(self, errp, timeout=15):
        ok = self.srv.wait_for(lambda: (self.lease() or {}).get("metadata", {}).get("annotations", {}).get(SAFE), timeout)
        self.assertTrue(ok, "the agent never wrote its Lease\n" + self.log(errp) + self.ctx())

    def fenced_with(self, timeout):
        end = time.monotonic() + timeout
        while True:
            if os.path.exists(self.fenced):
                with open(self.fenced) as f:
                    return f.read().split()
            if time.monotonic() >= end:
                return None
            time.sleep(0.1)

    def get(self, path, headers=None):
        req = urllib.request.Request("http://127.0.0.1:%d%s" % (self.port, path), headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=5) as r:
                return r.status, dict(r.headers), r.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read()

    # ------------------------------------------------------------ the Lease

    def test_lease_armed_renewed_and_kept(self):
        self.start_server()
        # an agent that fenced before: its fencing mark goes, the watcher's request and others stay
        self.put_lease("n1", {FENCING: "2026-01-01T00:00:00.000000Z kubelet", REQUEST: "2026-01-01T00:00:00.000000Z",
                              "example.com/other": "kept \"as\" it was"})
        p, errp = self.agent()
        self.srv.wait_for(lambda: "Armed" in self.log(errp), 15)
        le = self.lease()
        md, spec = le["metadata"], le["spec"]
        ann = md.get("annotations", {})
        self.assertEqual(md.get("labels"), {LABEL[0]: LABEL[1]}, le)
        self.assertEqual(spec.get("holderIdentity"), "n1", le)
        self.assertEqual(spec.get("leaseDurationSeconds"), SAFE_S, le)
        self.assertEqual(ann.get(SAFE), str(SAFE_S), le)
        self.assertEqual(ann.get(ADDR), "127.0.0.1:%d" % self.port, le)
        self.assertEqual(ann.get(ACTION), "exec", le)
        self.assertNotIn(FENCING, ann, "the fencing mark of a past fence stayed")
        self.assertEqual(ann.get(REQUEST), "2026-01-01T00:00:00.000000Z", "the agent removed the watcher's request")
        self.assertEqual(ann.get("example.com/other"), "kept \"as\" it was")
        rv = md["resourceVersion"]
        self.assertTrue(self.srv.wait_for(lambda: self.lease()["metadata"]["resourceVersion"] != rv, 8),
                        "no renewal within 8 s (renew 3 s)\n" + self.log(errp))
        self.assertEqual(self.lease()["metadata"]["annotations"].get(REQUEST), "2026-01-01T00:00:00.000000Z")
        st, _, body = self.get("/metrics")
        self.assertEqual(st, 200)
        self.assertIn(b"noderecover_fence_armed 1\n", body)
        self.assertIn(b"noderecover_fence_safe_seconds %d\n" % SAFE_S, body)
        self.assertIn(b"noderecover_fence_requests_seen_total 1\n", body)
        self.assertEqual(self.get("/readyz")[0], 200)
        self.assertEqual(self.get("/livez")[0], 200)
        r = self.stop_run(p, errp)
        self.assertEqual(r.rc, 0, r)
        self.assertFalse(os.path.exists(self.fenced), "fenced with the API server and the kubelet healthy\n" + r.stderr)
        self.assertNotIn(SECRET.decode(), r.stderr)
        self.assertNotIn(self.TOKEN, r.stderr)

    # ------------------------------------------------------------ cut off

    def test_cut_without_peers_fences(self):
        self.start_server()
        p, errp = self.agent()
        self.armed(errp)
        t0 = time.monotonic()
        self.cut = True
        got = self.fenced_with(20)
        took = time.monotonic() - t0
        self.assertEqual(got, ["n1"], "no fence within 20 s of the cut (after 2 s, isolated 2 s)\n" + self.log(errp))
        self.assertGreaterEqual(took, 3.5, "fenced before fence_after + isolated_after")
        self.assertIn("no peer answered", self.log(errp))
        puts = len(self.srv.reqs(method="PUT"))
        self.cut = False
        time.sleep(4)
        self.assertEqual(len(self.srv.reqs(method="PUT")), puts, "renewed after fencing\n" + self.log(errp))
        st, _, body = self.get("/metrics")
        self.assertIn(b"noderecover_fence_fenced 1\n", body)
        self.assertIn(b'noderecover_fence_fences_total{reason="isolated"} 1\n', body)
        self.assertEqual(self.get("/readyz")[0], 503)
        self.assertEqual(self.fenced_with(0), ["n1"], "fenced twice")

    def test_must_fail_readyz_ok_but_leases_failing(self):
        """What the watcher sees is the Lease: /readyz answering while every Lease request fails
        is cut off, and with no peer known the agent fences."""
        srv = self.start_server()
        # renewal not due for a minute: only the read (each check) can see the failure
        p, errp = self.agent(extra=["--fence-renew", "60s"])
        self.armed(errp)
        srv.on(Reply(503, status_body(503, "ServiceUnavailable", "etcd is unavailable")), times=None,
               path_prefix="/apis/coordination.k8s.io/")
        self.assertEqual(self.fenced_with(20), ["n1"], "never fenced while its Lease could not be read\n" + self.log(errp))
        self.assertIn("no peer answered", self.log(errp))
        self.assertEqual(self.get("/readyz")[0], 503)

    def test_must_fail_reads_answer_but_renewals_fail(self):
        """The check reads its Lease from the API server's watch cache, which can answer while
        every write fails (a server cut off from etcd): once the renewal is due every check
        writes, and the agent counts itself cut off until one succeeds, so it fences."""
        srv = self.start_server()
        p, errp = self.agent()   # renew 3 s
        self.armed(errp)
        srv.on(Reply(503, status_body(503, "ServiceUnavailable", "etcd is unavailable")), times=None, method="PUT",
               path_prefix="/apis/coordination.k8s.io/")
        self.assertEqual(self.fenced_with(25), ["n1"], "never fenced while its renewals failed\n" + self.log(errp))
        reads = [r for r in srv.reqs(method="GET") if r.path.endswith("/noderecover-fence-n1")]
        self.assertTrue(reads and all(("resourceVersion", "0") in r.query for r in reads),
                        "the check's reads are not the watch cache's: %s" % [r.target for r in reads[:3]])

    def test_stop_deletes_lease(self):
        """A SIGTERM before any fence deletes the agent's Lease (resourceVersion precondition):
        the watcher sees no agent, not an armed one gone silent."""
        self.start_server()
        p, errp = self.agent()
        self.armed(errp)
        r = self.stop_run(p, errp)
        self.assertEqual(r.rc, 0, r)
        self.assertIsNone(self.lease(), "the Lease stayed after a graceful stop\n" + r.stderr)
        dels = self.srv.reqs(method="DELETE")
        self.assertEqual(len(dels), 1, r.stderr)
        self.assertIn(b'"preconditions":{"resourceVersion":', dels[0].body)
        self.assertIn("Deleted lease", r.stderr)

    def test_must_fail_stop_after_fence_keeps_lease(self):
        """After a fence the Lease stays: the watcher counts S on it."""
        self.start_server()
        p, errp = self.agent()
        self.armed(errp)
        self.cut = True
        self.assertEqual(self.fenced_with(20), ["n1"], self.log(errp))
        self.cut = False
        r = self.stop_run(p, errp)
        self.assertIsNotNone(self.lease(), "the Lease was deleted after a fence\n" + r.stderr)
        self.assertEqual(self.srv.reqs(method="DELETE"), [], r.stderr)

    def test_peers_listed_fast_while_new(self):
        """A rollout's first agents learn the later ones within 30 s, not 5 minutes."""
        self.start_server()
        p, errp = self.agent()
        self.armed(errp)
        self.assertTrue(self.srv.wait_for(lambda: "Peers: 0" in self.log(errp), 10), self.log(errp))
        self.peer("p1", api=False)
        self.assertTrue(self.srv.wait_for(lambda: "Peers: 1" in self.log(errp), 40), self.log(errp))

    def test_must_fail_outage_reported_by_most_peers(self):
        self.start_server()
        seen = []
        self.peer("p1", api=False, seen=seen)
        self.peer("p2", api=False, seen=seen)
        self.put_lease("p3", {ADDR: "127.0.0.1:%d" % free_port()})   # a third that does not answer
        p, errp = self.agent()
        self.armed(errp)
        self.assertTrue(self.srv.wait_for(lambda: "Peers: 3" in self.log(errp), 10), self.log(errp))
        self.cut = True
        self.assertTrue(self.srv.wait_for(lambda: "control-plane outage" in self.log(errp), 15), self.log(errp))
        self.assertIsNone(self.fenced_with(6), "fenced in a control-plane outage\n" + self.log(errp))
        self.assertTrue(seen and all(n == "n1" and ok for n, ok in seen), "the agent's requests were not signed: %s" % seen)

    def test_must_fail_first_names_are_no_majority(self):
        """600 peers: the first 280 by name cut off with this one (answering so), the other 320
        silent. 280 of 600 is no outage: the agent fences. A build that lists one page of 300
        Leases and asks the first 256 counts 256 of 256 cut off, an outage, and never fences:
        a partition of the nodes whose names sort first would run on beside the replacements
        the watcher's taint lets start."""
        self.start_server()
        srv, port = serve(peer_handler(False, False))
        self.addCleanup(srv.shutdown)
        silent = free_port()
        for i in range(600):
            self.put_lease("a%03d" % i if i < 280 else "b%03d" % i,
                           {ADDR: "127.0.0.1:%d" % (port if i < 280 else silent)})
        p, errp = self.agent()
        self.armed(errp)
        # its list is read a page of 300 a check, and then S grows with the 4 batches that ask 600
        # (waited for, not asserted yet: a build that never writes it must fail on the fence)
        self.srv.wait_for(lambda: "Safe time now" in self.log(errp), 20)
        lease = self.lease()
        self.cut = True
        self.assertEqual(self.fenced_with(30), ["n1"], "280 of 600 peers taken for a majority: no fence\n" +
                         self.log(errp)[-3000:])
        self.assertNotIn("control-plane outage", self.log(errp))
        self.assertIn("no peer answered", self.log(errp))
        self.assertIn("Peers: 600 other fence agents", self.log(errp))
        self.assertGreaterEqual(self.srv.lease_pages, 3, "the list was not read in pages of 300")
        self.assertGreater(int(lease["metadata"]["annotations"][SAFE]), SAFE_S, "S did not grow with the batches")

    def test_peer_says_requested_fences(self):
        self.start_server()
        self.peer("p1", api=True, requested=True)
        self.peer("p2", api=False)
        p, errp = self.agent()
        self.armed(errp)
        self.assertTrue(self.srv.wait_for(lambda: "Peers: 2" in self.log(errp), 10), self.log(errp))
        self.cut = True
        self.assertEqual(self.fenced_with(15), ["n1"], self.log(errp))
        self.assertIn("a peer read a fence request", self.log(errp))

    def test_wrong_signature_is_no_answer(self):
        self.start_server()
        # an outage, were they signed with the secret
        self.peer("p1", api=False, secret=b"another-secret-0123456789")
        self.peer("p2", api=False, secret=b"another-secret-0123456789")
        p, errp = self.agent()
        self.armed(errp)
        self.assertTrue(self.srv.wait_for(lambda: "Peers: 2" in self.log(errp), 10), self.log(errp))
        self.cut = True
        self.assertEqual(self.fenced_with(15), ["n1"], "answers under another secret taken for an outage\n" + self.log(errp))
        self.assertNotIn("control-plane outage", self.log(errp))
        _, _, body = self.get("/metrics")
        self.assertNotIn(b'noderecover_fence_peer_answers_total{kind="none"} 0\n', body)
        self.assertIn(b'noderecover_fence_peer_answers_total{kind="api_down"} 0\n', body)

    def test_two_agents(self):
        """n1 cut off asks n2, a real agent, which reads n1's Lease: no request, carry on; a request, fence."""
        self.start_server()
        tok = os.path.join(self.tmp, "token-2")
        with open(tok, "w") as f:
            f.write(TOKEN_2 + "\n")
        p2, err2 = self.agent("n2", port=free_port(), token=tok)
        self.assertTrue(self.srv.wait_for(lambda: self.lease("n2"), 15), self.log(err2))
        p1, err1 = self.agent("n1")
        self.armed(err1)
        self.assertTrue(self.srv.wait_for(lambda: "Peers: 1" in self.log(err1), 10), self.log(err1))
        self.cut = True
        self.assertTrue(self.srv.wait_for(lambda: "asking 1 peers" in self.log(err1), 10), self.log(err1))
        self.assertIsNone(self.fenced_with(5), "fenced while a peer reached the API server and saw no request\n" + self.log(err1))
        self.annotate("n1", REQUEST, "2026-12-03T12:00:00.000000Z")
        self.assertEqual(self.fenced_with(10), ["n1"], self.log(err1) + self.log(err2))
        self.assertIn("a peer read a fence request", self.log(err1))
        self.assertIsNone(self.lease("n2")["metadata"]["annotations"].get(FENCING), self.log(err2))

    # ------------------------------------------------------------ a request

    def test_request_with_kubelet_unhealthy_fences(self):
        self.start_server()
        url = self.kubelet()
        t0 = time.monotonic()
        p, errp = self.agent(after=6, kubelet=url)
        self.armed(errp)
        # up for fence_after: the request is served two unhealthy checks after it comes, sooner
        # than the kubelet's own 6 s
        time.sleep(max(0, 6.5 - (time.monotonic() - t0)))
        self.kubelet_status = 500
        self.annotate("n1", REQUEST, "2026-12-03T12:00:00.000000Z")
        self.assertEqual(self.fenced_with(15), ["n1"], self.log(errp))
        ann = self.lease()["metadata"]["annotations"]
        self.assertTrue(ann.get(FENCING, "").endswith(" requested"), "fencing mark: %r\n%s" % (ann.get(FENCING), self.log(errp)))
        self.assertIn("a fence was requested and its kubelet is unhealthy", self.log(errp))

    def test_must_fail_request_with_kubelet_healthy(self):
        self.start_server()
        url = self.kubelet()
        p, errp = self.agent(kubelet=url)
        self.armed(errp)
        self.annotate("n1", REQUEST, "2026-12-03T12:00:00.000000Z")
        self.assertTrue(self.srv.wait_for(lambda: "Fence request" in self.log(errp), 10), self.log(errp))
        self.assertIsNone(self.fenced_with(5), "fenced on a request with its kubelet healthy\n" + self.log(errp))
        self.assertNotIn(FENCING, self.lease()["metadata"]["annotations"])

    # ------------------------------------------------------------ the peer endpoint

    def test_peer_endpoint_signed_only(self):
        self.start_server()
        self.put_lease("asker", {REQUEST: "2026-12-03T12:00:00.000000Z"})
        p, errp = self.agent()
        self.armed(errp)
        self.assertTrue(self.srv.wait_for(lambda: self.get("/readyz")[0] == 200, 5), self.log(errp))
        nonce = "0123456789abcdef0123456789abcdef"
        path = "/fence/v1/peer?node=asker&nonce=" + nonce
        st, hdr, body = self.get(path)
        self.assertEqual((st, body), (401, b""), "an unsigned request was answered")
        st, _, body = self.get(path, {"Authorization": "NoderecoverPeer " + "0" * 64})
        self.assertEqual((st, body), (401, b""), "a forged request was answered")
        st, hdr, body = self.get(path, {"Authorization": "NoderecoverPeer " + sign("req", "asker", nonce)})
        self.assertEqual((st, body), (200, b'{"api":true,"requested":true}'))
        self.assertEqual(hdr.get("X-Noderecover-Peer"), hmac.new(SECRET, b"resp\n" + nonce.encode() + b"\n" + body,
                                                                hashlib.sha256).hexdigest())
        st, hdr, body = self.get("/fence/v1/peer?node=nobody&nonce=" + nonce,
                                 {"Authorization": "NoderecoverPeer " + sign("req", "nobody", nonce)})
        self.assertEqual((st, body), (200, b'{"api":true,"requested":false}'))
        _, _, m = self.get("/metrics")
        self.assertIn(b'noderecover_fence_peer_requests_total{result="refused"} 2\n', m)
        self.assertIn(b'noderecover_fence_peer_requests_total{result="answered"} 2\n', m)

    # ------------------------------------------------------------ settings

    def test_refusals(self):
        """Bad settings are refused before anything is sent (exit 2, one line naming the setting)."""
        self.start_server()
        short = os.path.join(self.tmp, "short")
        with open(short, "wb") as f:
            f.write(b"0123456789abcde")
        base = ["--fence-namespace", NS, "--fence-peer-secret-file", self.secret, "--fence-address", "127.0.0.1:1"]
        cases = [
            ([], {"NODE_NAME": None}, None, "--self-node"),
            (["--fence-peer-secret-file", self.secret], {}, "n1", "--fence-namespace"),
            (["--fence-namespace", NS, "--fence-address", "127.0.0.1:1"], {}, "n1", "--fence-peer-secret-file"),
            (["--fence-namespace", NS, "--fence-peer-secret-file", self.secret], {}, "n1", "--fence-address"),
            (base + ["--fence-action", "halt"], {}, "n1", "--fence-action 'halt'"),
            (base + ["--fence-action", "exec"], {}, "n1", "--fence-exec"),
            (base + ["--fence-address", ":9466"], {}, "n1", "--fence-address"),
            (base + ["--fence-kubelet-url", "http://localhost:10248/healthz"], {}, "n1", "--fence-kubelet-url"),
            (["--fence-namespace", NS, "--fence-peer-secret-file", short, "--fence-address", "127.0.0.1:1"], {}, "n1",
             "fewer than 16"),
            (base, {}, "n" * 236, "cannot be armed"),
            (base + ["--fence-check", "0s"], {}, "n1", "--fence-check"),
            (base + ["--fence-action", "watchdog", "--fence-watchdog", "/dev/null"], {}, "n1", "cannot be read back"),
        ]
        for extra, env, node, want in cases:
            argv = self.args("fence", taint_after=None, self_node=node, extra=extra)
            r = self.once(argv=argv, env=env, timeout=20)
            self.assertEqual(r.rc, 2, "%s: %s" % (want, r))
            self.assertIn(want, r.stderr, r)
        # the binary run as noderecover-fence is the agent, with options only
        link = os.path.join(self.tmp, "noderecover-fence")
        os.symlink(BINARY, link)
        argv = self.args("fence", taint_after=None, self_node="n1", extra=["--fence-namespace", NS])
        argv[0:2] = [link]
        r = self.once(argv=argv, timeout=20)
        self.assertEqual(r.rc, 2, r)
        self.assertIn("--fence-peer-secret-file", r.stderr, r)
        self.assertEqual(self.srv.reqs(), [], "a request was sent before the settings were checked")
        # NODE_NAME (the downward API) names the node; POD_IP and the listen port the address
        argv = self.args("fence", taint_after=None, self_node=None, extra=[
            "--fence-namespace", NS, "--fence-peer-secret-file", self.secret, "--fence-listen", "127.0.0.1:%d" % self.port,
            "--fence-action", "exec", "--fence-exec", self.script, "--fence-kubelet-url", ""])
        p, errp = self.start("fence", env={"NODE_NAME": "from-env", "POD_IP": "127.0.0.2"}, taint_after=None, self_node=None,
                             extra=argv[argv.index("--fence-namespace"):])
        ok = self.srv.wait_for(lambda: (self.lease("from-env") or {}).get("metadata", {}).get("annotations", {}).get(ADDR), 15)
        self.assertEqual(ok, "127.0.0.2:%d" % self.port, self.log(errp))

