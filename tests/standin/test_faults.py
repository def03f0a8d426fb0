"""Faults on demand: each ends with exit 1, a clear one-line error, and no PATCH or DELETE.

Every fault is sticky (every attempt gets it), so the binary's bounded retries cannot
turn it into a success; the number of attempts is checked to be bounded.
The cluster holds a stale labelled node, so any action at all would show.
"""
import unittest

import fixtures
from apiserver import Fault, Reply, StandIn, status_body
from harness import Case, certdir, ready, uk

LABEL = fixtures.DEFAULT_PRUNE_LABEL
MAX_ATTEMPTS = 8


def cluster():
    return fixtures.etcd_servers(3) + [uk("self", since=7200), uk("agent-1", since=400, labels={LABEL: "true"}),
                                       ready("agent-2")]


class FaultCase(Case):
    """Helpers only (no tests), for the slow-server modules to share."""

    def fails_cleanly(self, r, words=("failed",)):
        self.assertRc(r, 1)
        self.assertNoActions(r)
        self.assertIsNotNone(self.srv.node("agent-1"))
        self.assertEqual(self.oos_taints("agent-1"), [])
        for w in words:
            self.assertLog(r, w)
        self.assertNotIn(self.TOKEN, r.stderr + r.stdout, "token leaked into the output")
        self.assertLessEqual(len(self.srv.reqs()), MAX_ATTEMPTS, "attempts are bounded" + self.ctx(r))
        self.assertLogShape(r)
        for ln in r.lines:
            self.assertLess(len(ln), 1000, "log lines stay short" + self.ctx(r))



class Faults(FaultCase):
    def fault(self, fault, chunked=True, **kw):
        self.server(cluster(), chunked=chunked)
        self.srv.on(fault, times=None, list_only=True)
        return self.once(taint_after=60, prune_after=300, timeout=120, **kw)

    def test_connection_closed_mid_body_chunked(self):
        self.fails_cleanly(self.fault(Fault("close_mid_body", chunked=True)))

    def test_connection_closed_mid_body_content_length(self):
        self.fails_cleanly(self.fault(Fault("close_mid_body", chunked=False), chunked=False))

    def test_connection_closed_without_reply(self):
        self.fails_cleanly(self.fault(Fault("close_no_reply")))

    def test_broken_chunk_size(self):
        self.fails_cleanly(self.fault(Fault("bad_chunk")))

    def test_garbage_json(self):
        self.fails_cleanly(self.fault(Fault("garbage_json")))

    def test_truncated_json_in_a_well_framed_body(self):
        self.fails_cleanly(self.fault(Fault("truncated_json", chunked=False), chunked=False))

    def test_status_line_garbage(self):
        self.fails_cleanly(self.fault(Fault("raw", data=b"SSH-2.0-OpenSSH_9.2\r\n\r\n")))

    def test_huge_header_line(self):
        self.fails_cleanly(self.fault(Fault("huge_header", size=200000)))

    def test_too_many_headers(self):
        self.fails_cleanly(self.fault(Fault("many_headers", count=5000)))

    def test_redirect_not_followed(self):
        r = self.fault(Fault("redirect", location="https://127.0.0.1:%d/elsewhere/api/v1/nodes?limit=500" % 1))
        self.fails_cleanly(r)
        self.assertEqual([q for q in self.srv.reqs() if not q.path.startswith("/api/v1/nodes")], [])

    def test_redirect_to_same_server_not_followed(self):
        self.server(cluster())
        self.srv.on(Fault("redirect", location=self.srv.url + "/elsewhere/api/v1/nodes"), times=None, list_only=True)
        r = self.once(taint_after=60, prune_after=300)
        self.fails_cleanly(r)
        self.assertEqual([q.target for q in self.srv.reqs() if q.path.startswith("/elsewhere")], [],
                         "redirect followed" + self.ctx(r))

    def test_server_error_forever(self):
        r = self.fault(Reply(500, status_body(500, "InternalError", "Internal error occurred: etcdserver: leader changed")))
        self.fails_cleanly(r)

    def test_list_forbidden(self):
        self.server(cluster(), verbs=("get", "patch", "delete"))
        self.reviews_refused()  # else the permission check stops it first (test_access)
        r = self.once(taint_after=60, prune_after=300)
        self.fails_cleanly(r)
        self.assertEqual([q.status for q in self.srv.reqs()][:1], [403])

    def test_bad_token_forever(self):
        self.server(cluster())
        self.write_token("not-the-token")
        r = self.once(taint_after=60, prune_after=300)
        self.fails_cleanly(r)
        self.assertNotIn("not-the-token", r.stderr)

    def test_list_not_a_node_list(self):
        self.fails_cleanly(self.fault(Reply(200, {"kind": "Status", "apiVersion": "v1", "status": "Success"})))

    def tls_fault(self, cert, host="127.0.0.1", extra=()):
        self.srv = StandIn(certdir(), cert=cert, nodes=cluster(), token=self.TOKEN).start()
        self.addCleanup(self.srv.stop)
        self.listed = {}
        argv = self.args(taint_after=60, prune_after=300, extra=extra)
        argv[argv.index("--server") + 1] = "https://%s:%d" % (host, self.srv.port)
        r = self.once(argv=argv, timeout=120)
        self.fails_cleanly(r)
        self.assertEqual(self.srv.reqs(), [], "no request over an unverified connection" + self.ctx(r))
        self.assertGreaterEqual(self.srv.connections, 1, "it did try to connect" + self.ctx(r))
        return r

    def test_wrong_ca(self):
        self.tls_fault("wrongca")

    def test_cert_for_another_name(self):
        self.tls_fault("othername")

    def test_cert_for_another_name_via_localhost(self):
        self.tls_fault("othername", host="localhost")

    def test_cert_for_another_ip(self):
        self.tls_fault("otherip")

    def test_ip_spelled_as_dns_name_is_not_an_ip_san(self):
        # a certificate whose only SAN is DNS:127.0.0.1; Go (kubectl) rejects it for an IP server
        self.tls_fault("dnsip")

    def test_tls_server_name_must_still_match(self):
        self.tls_fault("othername", extra=["--tls-server-name", "another.example"])

    def test_oversized_node_is_an_error_for_that_node_only(self):
        big = uk("agent-0-big", since=400, annotations={"example.com/blob": "x" * (4 * 1024 * 1024)})
        self.server(cluster() + [big, uk("agent-9", since=120)])
        r = self.once(taint_after=60, timeout=120)
        self.assertRc(r, (0, 1))
        self.assertTainted("agent-9", r)
        self.assertTrue(r.rc == 0 or self.srv.reqs("PATCH", node="agent-0-big") == [], self.ctx(r))


if __name__ == "__main__":
    unittest.main()
