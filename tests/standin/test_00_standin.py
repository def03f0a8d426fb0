"""Self-tests of the stand-in API server itself, with Python's own TLS client (no binary).

If these fail, the other tests' verdicts on the binary mean nothing.
"""
import http.client
import json
import os
import socket
import ssl
import unittest

import fixtures
from apiserver import Fault, PatchError, Reply, StandIn, apply_patch
from harness import certdir

TOK = "tok-abc"


class Client:
    def __init__(self, srv, cafile="ca.crt", token=TOK, cert=None):
        ctx = ssl.create_default_context(cafile=os.path.join(certdir(), cafile))
        if cert:
            ctx.load_cert_chain(os.path.join(certdir(), "client.crt"), os.path.join(certdir(), "client.key"))
        self.c = http.client.HTTPSConnection("127.0.0.1", srv.port, context=ctx, timeout=10)
        self.token = token

    def req(self, method, path, body=None, ctype=None):
        h = {}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        if ctype:
            h["Content-Type"] = ctype
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
        self.c.request(method, path, body=body, headers=h)
        r = self.c.getresponse()
        data = r.read()
        return r, data

    def js(self, *a, **k):
        r, d = self.req(*a, **k)
        return r.status, json.loads(d)


class PatchTest(unittest.TestCase):
    doc = {"a": {"b/c": 1, "d~e": [1, 2]}, "l": [1]}

    def test_ops(self):
        out = apply_patch(self.doc, [
            {"op": "test", "path": "/a/b~1c", "value": 1},
            {"op": "add", "path": "/a/d~0e/-", "value": 3},
            {"op": "add", "path": "/a/d~0e/0", "value": 0},
            {"op": "remove", "path": "/l/0"},
            {"op": "replace", "path": "/a/b~1c", "value": "x"},
            {"op": "add", "path": "/new", "value": {}},
            {"op": "copy", "from": "/a/b~1c", "path": "/new/c"},
            {"op": "move", "from": "/new/c", "path": "/m"},
        ])
        self.assertEqual(out, {"a": {"b/c": "x", "d~e": [0, 1, 2, 3]}, "l": [], "new": {}, "m": "x"})
        self.assertEqual(self.doc["l"], [1], "input left alone")

    def test_failures(self):
        for ops in ([{"op": "test", "path": "/a/b~1c", "value": 2}],
                    [{"op": "test", "path": "/a/b~1c", "value": "1"}],
                    [{"op": "remove", "path": "/nope"}],
                    [{"op": "remove", "path": "/l/1"}],
                    [{"op": "add", "path": "/x/y", "value": 1}],
                    [{"op": "replace", "path": "/zz", "value": 1}],
                    [{"op": "add", "path": "/a/b~2c", "value": 1}],
                    [{"op": "add", "path": "/l/01", "value": 1}],
                    [{"op": "frob", "path": "/a"}]):
            with self.assertRaises(PatchError, msg=ops):
                apply_patch(self.doc, ops)


class ServerTest(unittest.TestCase):
    def setUp(self):
        nodes = [fixtures.node("n-%d" % i, ready="Unknown" if i == 3 else "True", since=300) for i in range(7)]
        self.srv = StandIn(certdir(), nodes=nodes, token=TOK).start()
        self.addCleanup(self.srv.stop)

    def test_paging_continue_and_410(self):
        c = Client(self.srv)
        names, url, pages = [], "/api/v1/nodes?limit=3", 0
        while url and pages < 10:
            pages += 1
            st, d = c.js("GET", url)
            self.assertEqual(st, 200)
            names += [i["metadata"]["name"] for i in d["items"]]
            cont = d["metadata"].get("continue")
            url = "/api/v1/nodes?limit=3&continue=" + cont if cont else None
        self.assertEqual(names, ["n-%d" % i for i in range(7)])
        self.assertEqual(pages, 3)
        self.assertEqual(len(set(r.conn_id for r in self.srv.reqs())), 1, "keep-alive")
        st, d = c.js("GET", "/api/v1/nodes?limit=3")
        self.srv.expire_continue = 1
        st, e = c.js("GET", "/api/v1/nodes?limit=3&continue=" + d["metadata"]["continue"])
        self.assertEqual((st, e["reason"], e["code"]), (410, "Expired", 410))
        st, e = c.js("GET", "/api/v1/nodes?limit=3&continue=" + d["metadata"]["continue"] + "&labelSelector=x")
        self.assertEqual(st, 400)

    def test_content_length_mode(self):
        self.srv.chunked = False
        c = Client(self.srv)
        r, d = c.req("GET", "/api/v1/nodes")
        self.assertEqual(r.getheader("Content-Length"), str(len(d)))
        self.assertIsNone(r.getheader("Transfer-Encoding"))
        self.srv.chunked = True
        r, d = c.req("GET", "/api/v1/nodes")
        self.assertEqual(r.getheader("Transfer-Encoding"), "chunked")
        self.assertEqual(len(json.loads(d)["items"]), 7)

    def test_patch_422_409_404_and_delete(self):
        c = Client(self.srv)
        rv = self.srv.node("n-3")["metadata"]["resourceVersion"]
        ct = "application/json-patch+json"
        st, e = c.js("PATCH", "/api/v1/nodes/n-3", [{"op": "test", "path": "/metadata/resourceVersion", "value": "1"}], ct)
        self.assertEqual((st, e["reason"], e["message"]),
                         (422, "Invalid", "the server rejected our request due to an error in our request"))
        st, n = c.js("PATCH", "/api/v1/nodes/n-3", [
            {"op": "test", "path": "/metadata/resourceVersion", "value": rv},
            {"op": "add", "path": "/spec/taints", "value": [fixtures.OOS_TAINT]},
            {"op": "add", "path": "/metadata/annotations/a.io~1b", "value": "t"}], ct)
        self.assertEqual(st, 200)
        self.assertNotEqual(n["metadata"]["resourceVersion"], rv)
        self.assertEqual(self.srv.node("n-3")["metadata"]["annotations"]["a.io/b"], "t")
        st, e = c.js("PATCH", "/api/v1/nodes/n-3", [{"op": "add", "path": "/spec/taints/-", "value": fixtures.OOS_TAINT}], ct)
        self.assertEqual(st, 422, "duplicate taint refused")
        st, e = c.js("PATCH", "/api/v1/nodes/n-3", [{"op": "remove", "path": "/spec/taints/4"}], ct)
        self.assertEqual(st, 422)
        st, e = c.js("PATCH", "/api/v1/nodes/n-3", [], "application/merge-patch+json")
        self.assertEqual(st, 415)
        st, e = c.js("PATCH", "/api/v1/nodes/zz", [], ct)
        self.assertEqual(st, 404)
        uid = n["metadata"]["uid"]
        st, e = c.js("DELETE", "/api/v1/nodes/n-3", {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {
            "uid": uid, "resourceVersion": rv}})
        self.assertEqual((st, e["reason"]), (409, "Conflict"))
        st, e = c.js("DELETE", "/api/v1/nodes/n-3", {"preconditions": {"uid": "other", "resourceVersion": n["metadata"]["resourceVersion"]}})
        self.assertEqual(st, 409)
        st, g = c.js("DELETE", "/api/v1/nodes/n-3", {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {
            "uid": uid, "resourceVersion": n["metadata"]["resourceVersion"]}})
        self.assertEqual((st, g["metadata"]["name"]), (200, "n-3"))
        st, e = c.js("DELETE", "/api/v1/nodes/n-3")
        self.assertEqual((st, e["reason"]), (404, "NotFound"))
        self.assertIsNone(self.srv.node("n-3"))

    def test_auth_rotation_verbs_and_client_cert(self):
        st, e = Client(self.srv, token="bad").js("GET", "/api/v1/nodes")
        self.assertEqual((st, e["reason"]), (401, "Unauthorized"))
        self.srv.set_token("new")
        self.assertEqual(Client(self.srv, token=TOK).js("GET", "/api/v1/nodes")[0], 401)
        self.assertEqual(Client(self.srv, token="new").js("GET", "/api/v1/nodes")[0], 200)
        self.srv.verbs = {"list", "get", "patch"}
        st, e = Client(self.srv, token="new").js("DELETE", "/api/v1/nodes/n-1")
        self.assertEqual((st, e["reason"]), (403, "Forbidden"))
        s2 = StandIn(certdir(), nodes=[fixtures.node("a")], client_ca=True).start()
        self.addCleanup(s2.stop)
        self.assertEqual(Client(s2, token=None, cert=True).js("GET", "/api/v1/nodes")[0], 200)
        self.assertEqual(Client(s2, token=None).js("GET", "/api/v1/nodes")[0], 401)

    def test_rules_and_faults(self):
        self.srv.on(Reply(429, "Too many requests, please try again later.\n", headers=[("Retry-After", "1")],
                          content_type="text/plain; charset=utf-8"), list_only=True)
        c = Client(self.srv)
        r, d = c.req("GET", "/api/v1/nodes")
        self.assertEqual((r.status, r.getheader("Retry-After")), (429, "1"))
        self.assertEqual(c.req("GET", "/api/v1/nodes")[0].status, 200)
        self.srv.on(Fault("redirect", location="https://127.0.0.1:1/elsewhere"), list_only=True)
        self.assertEqual(c.req("GET", "/api/v1/nodes")[0].status, 302)
        for kind in ("close_mid_body", "bad_chunk", "close_no_reply"):
            self.srv.on(Fault(kind), list_only=True)
            with self.assertRaises((http.client.HTTPException, OSError), msg=kind):
                Client(self.srv).req("GET", "/api/v1/nodes")
        self.srv.on(Fault("garbage_json"), list_only=True)
        r, d = Client(self.srv).req("GET", "/api/v1/nodes")
        with self.assertRaises(ValueError):
            json.loads(d)

    def test_wrong_certs_rejected_by_a_verifying_client(self):
        for cert, host in (("wrongca", "127.0.0.1"), ("othername", "127.0.0.1"), ("otherip", "127.0.0.1"),
                           ("dnsip", "127.0.0.1")):
            s = StandIn(certdir(), cert=cert).start()
            self.addCleanup(s.stop)
            ctx = ssl.create_default_context(cafile=os.path.join(certdir(), "ca.crt"))
            with self.assertRaises(ssl.SSLError, msg=cert):
                with socket.create_connection(("127.0.0.1", s.port), timeout=5) as raw:
                    ctx.wrap_socket(raw, server_hostname=host).close()


if __name__ == "__main__":
    unittest.main()
