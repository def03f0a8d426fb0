"""Self-tests of the stand-in API server itself, with Python's own TLS client (no binary).

If these fail, the other tests' verdicts on the binary mean nothing.
"""
import http.client
import json
import os
import socket
import ssl
import threading
import time
import unittest

import fixtures
from apiserver import Fault, PatchError, Reply, StandIn, apply_patch, status_body
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


class Stream:
    """A watch read the hard way, over a raw TLS socket: the response head, then the chunks one
    by one (their sizes kept), the events they carry as JSON lines, and how it ended."""

    def __init__(self, srv, query, token=TOK, timeout=10):
        ctx = ssl.create_default_context(cafile=os.path.join(certdir(), "ca.crt"))
        raw = socket.create_connection(("127.0.0.1", srv.port), timeout=timeout)
        self.s = ctx.wrap_socket(raw, server_hostname="127.0.0.1")
        self.s.sendall(("GET /api/v1/nodes?%s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                        "Accept: application/json\r\n\r\n" % (query, token)).encode())
        self.buf = b""
        self.reads = []      # the size of every recv
        self.chunks = []     # the size of every chunk
        self.body = b""      # the de-chunked bytes not yet taken as events
        self.ended = None    # "end" (the last chunk), "eof" (closed without it), "timeout"
        head = self._until(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        self.status = int(lines[0].split()[1])
        self.headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
        self.whole = None
        if self.headers.get("transfer-encoding") != "chunked":
            n = int(self.headers.get("content-length", "0"))
            while len(self.buf) < n:
                self._recv()
            self.whole = self.buf[:n]

    def _recv(self):
        d = self.s.recv(65536)
        if not d:
            raise EOFError
        self.reads.append(len(d))
        self.buf += d

    def _until(self, sep):
        while sep not in self.buf:
            self._recv()
        i = self.buf.index(sep)
        out, self.buf = self.buf[:i], self.buf[i + len(sep):]
        return out

    def events(self, n=None, seconds=10):
        """Events until n of them (None: until the stream ends) or seconds pass."""
        out = []
        self.s.settimeout(0.2)
        end = time.monotonic() + seconds
        while (n is None or len(out) < n) and self.ended is None:
            while b"\n" in self.body and (n is None or len(out) < n):
                line, self.body = self.body.split(b"\n", 1)
                out.append(json.loads(line.decode("utf-8")))
            if n is not None and len(out) >= n:
                break
            if time.monotonic() > end:
                self.ended = "timeout"
                break
            try:
                size = self._until(b"\r\n")
                n_bytes = int(size, 16)
                while len(self.buf) < n_bytes + 2:
                    self._recv()
                self.chunks.append(n_bytes)
                self.body += self.buf[:n_bytes]
                self.buf = self.buf[n_bytes + 2:]
                if n_bytes == 0:
                    self.ended = "end"
            except socket.timeout:
                continue
            except (EOFError, ConnectionError, ssl.SSLError):
                self.ended = "eof"
        return out

    def close(self):
        self.s.close()


def go_unknown(n):
    for c in n["status"]["conditions"]:
        if c["type"] == "Ready":
            c["status"] = "Unknown"


class WatchServerTest(unittest.TestCase):
    """The stand-in's watches, read with Python's own TLS: replay, live events, 410, bookmarks,
    ERROR events, ends and cuts, silence, bytes split anywhere, raw events, 429, the query."""

    def setUp(self):
        nodes = [fixtures.node("n-%d" % i) for i in range(4)]
        self.srv = StandIn(certdir(), nodes=nodes, token=TOK).start()
        self.addCleanup(self.srv.stop)
        st, d = Client(self.srv).js("GET", "/api/v1/nodes?limit=500")
        self.assertEqual(st, 200)
        self.list_rv = int(d["metadata"]["resourceVersion"])

    def watch(self, rv=None, bookmarks=True, timeout=None, extra=""):
        q = "watch=1"
        if rv is not None:
            q += "&resourceVersion=%s" % rv
        if bookmarks:
            q += "&allowWatchBookmarks=true"
        if timeout is not None:
            q += "&timeoutSeconds=%d" % timeout
        w = Stream(self.srv, q + extra)
        self.addCleanup(w.close)
        return w

    def test_replay_after_rv_then_live_in_one_counter(self):
        L = self.list_rv
        self.srv.touch("n-1", go_unknown)
        self.srv.delete_node("n-2")
        self.srv.add_node(fixtures.node("n-9"))
        w = self.watch(L)
        self.assertEqual((w.status, w.headers.get("content-type")), (200, "application/json"))
        ev = w.events(3)
        self.assertEqual([(e["type"], e["object"]["metadata"]["name"], e["object"]["metadata"]["resourceVersion"])
                          for e in ev], [("MODIFIED", "n-1", str(L + 1)), ("DELETED", "n-2", str(L + 2)),
                                         ("ADDED", "n-9", str(L + 3))])
        self.assertEqual(ev[0]["object"]["kind"], "Node")
        # a PATCH by a client is an event too, with the next resourceVersion of the same counter
        rv = self.srv.node("n-0")["metadata"]["resourceVersion"]
        st, _ = Client(self.srv).js("PATCH", "/api/v1/nodes/n-0", [
            {"op": "test", "path": "/metadata/resourceVersion", "value": rv},
            {"op": "add", "path": "/metadata/labels/x", "value": "y"}], "application/json-patch+json")
        self.assertEqual(st, 200)
        live = w.events(1)
        self.assertEqual((live[0]["type"], live[0]["object"]["metadata"]["resourceVersion"]), ("MODIFIED", str(L + 4)))
        self.assertEqual(live[0]["object"]["metadata"]["labels"]["x"], "y")
        # from L + 2: only what came after it
        w2 = self.watch(L + 2)
        self.assertEqual([e["object"]["metadata"]["name"] for e in w2.events(2)], ["n-9", "n-0"])
        req = self.srv.watches()[0]
        self.assertTrue(req.is_watch)
        self.assertFalse(req.is_list)
        self.assertEqual(req.rv, str(L))
        self.assertEqual(req.qdict()["allowWatchBookmarks"], "true")
        self.assertEqual(len(self.srv.lists()), 1, "a watch is not a list")
        self.assertEqual(len(self.srv.watches()), 2)

    def test_no_resource_version_sends_every_node_added(self):
        w = self.watch(None)
        ev = w.events(4)
        self.assertEqual([(e["type"], e["object"]["metadata"]["name"]) for e in ev],
                         [("ADDED", "n-%d" % i) for i in range(4)])

    def test_timeout_seconds_ends_the_stream_normally(self):
        t0 = time.monotonic()
        w = self.watch(self.list_rv, timeout=1)
        self.assertEqual(w.events(None, seconds=5), [])
        self.assertEqual(w.ended, "end")
        self.assertLess(time.monotonic() - t0, 3)
        self.srv.wait_for(lambda: self.srv.watches()[0].ended, 2)
        self.assertEqual(self.srv.watches()[0].ended, "timeout")

    def test_compacted_rv_410_in_stream_and_before_it(self):
        self.srv.touch("n-1", go_unknown)
        self.srv.compact()
        w = self.watch(self.list_rv)
        ev = w.events(None, seconds=5)
        self.assertEqual(w.status, 200)
        self.assertEqual(len(ev), 1, ev)
        self.assertEqual(ev[0]["type"], "ERROR")
        self.assertEqual((ev[0]["object"]["kind"], ev[0]["object"]["code"], ev[0]["object"]["reason"]),
                         ("Status", 410, "Expired"))
        self.assertIn("too old resource version: %d" % self.list_rv, ev[0]["object"]["message"])
        self.assertEqual(w.ended, "end", "the stream ends after its ERROR")
        # from the current resourceVersion: fine
        w2 = self.watch(self.srv.rv)
        self.srv.touch("n-3")
        self.assertEqual(w2.events(1)[0]["type"], "MODIFIED")
        self.srv.expire_before_stream = True
        w3 = self.watch(self.list_rv)
        self.assertEqual(w3.status, 410)
        self.assertEqual(json.loads(w3.whole or w3.body + w3.buf)["reason"] if w3.whole is not None else "Expired",
                         "Expired")
        # a list continued from before the compaction: 410 too
        st, d = Client(self.srv).js("GET", "/api/v1/nodes?limit=2")
        self.srv.touch("n-0")
        self.srv.compact()
        st, e = Client(self.srv).js("GET", "/api/v1/nodes?limit=2&continue=" + d["metadata"]["continue"])
        self.assertEqual((st, e["reason"]), (410, "Expired"))

    def test_log_window_slides(self):
        self.srv.log_max = 5
        for _ in range(8):
            self.srv.touch("n-0")
        w = self.watch(self.list_rv)
        self.assertEqual(w.events(1)[0]["object"]["code"], 410)
        w2 = self.watch(self.srv.rv - 4)
        self.assertEqual(len(w2.events(4)), 4)

    def test_bookmarks_when_allowed_carry_the_current_rv(self):
        self.srv.bookmark_every = 0.3
        w = self.watch(self.list_rv)
        self.srv.touch("n-2")
        ev = w.events(3, seconds=5)
        self.assertEqual([e["type"] for e in ev], ["MODIFIED", "BOOKMARK", "BOOKMARK"])
        self.assertEqual(ev[1]["object"]["metadata"]["resourceVersion"], str(self.srv.rv))
        self.assertEqual(ev[1]["object"]["kind"], "Node")
        w2 = self.watch(self.list_rv, bookmarks=False)
        self.assertEqual([e["type"] for e in w2.events(None, seconds=1.2)], ["MODIFIED"])

    def test_error_events_other_codes_and_429_before(self):
        self.srv.on(Fault("watch", error=500), watch=True)
        w = self.watch(self.list_rv)
        ev = w.events(None, seconds=5)
        self.assertEqual([(e["type"], e["object"]["code"]) for e in ev], [("ERROR", 500)])
        self.assertEqual(w.ended, "end")
        w = self.watch(self.srv.rv + 50)
        e = w.events(None, seconds=5)[0]["object"]
        self.assertEqual((e["code"], e["reason"]), (504, "Timeout"))
        self.assertIn("Too large resource version", e["message"])
        self.srv.on(Reply(429, status_body(429, "TooManyRequests", "too many requests"),
                          headers=[("Retry-After", "3")]), watch=True)
        w = self.watch(self.list_rv)
        self.assertEqual((w.status, w.headers.get("retry-after")), (429, "3"))
        self.assertEqual(Client(self.srv).js("GET", "/api/v1/nodes")[0], 200, "the rule is for watches only")
        self.srv.on(Fault("watch", error=410, error_after=1), watch=True)
        w = self.watch(self.list_rv)
        self.srv.touch("n-1")
        self.assertEqual([e["type"] for e in w.events(None, seconds=5)], ["MODIFIED", "ERROR"])
        # an open stream told of an error
        w = self.watch(self.srv.rv)
        self.srv.wait_for(lambda: self.srv.open_watches() == 1, 2)
        self.srv.watch_error(410)
        ev = w.events(None, seconds=5)
        self.assertEqual([(e["type"], e["object"]["code"]) for e in ev], [("ERROR", 410)])

    def test_end_cut_and_silence_on_demand(self):
        w = self.watch(self.list_rv)
        self.srv.wait_for(lambda: self.srv.open_watches() == 1, 2)
        self.srv.touch("n-1")
        self.srv.end_watches()
        self.assertEqual(len(w.events(None, seconds=5)), 1)
        self.assertEqual(w.ended, "end")
        w = self.watch(self.srv.rv)
        self.srv.wait_for(lambda: self.srv.open_watches() == 1, 2)
        self.srv.cut_watches()
        self.assertEqual(w.events(None, seconds=5), [])
        self.assertEqual(w.ended, "eof", "cut: no last chunk")
        self.srv.wait_for(lambda: self.srv.watches()[-1].ended, 2)
        self.assertEqual(self.srv.watches()[-1].ended, "cut")
        self.srv.bookmark_every = 0.2
        w = self.watch(self.srv.rv)
        self.srv.wait_for(lambda: self.srv.open_watches() == 1, 2)
        self.srv.silence_watches()
        self.srv.touch("n-1")
        self.assertEqual(w.events(None, seconds=1.5), [], "silent: not an event, not a bookmark")
        self.assertEqual(w.ended, "timeout", "and still open")
        self.srv.on(Fault("watch", silent_after=1), watch=True)
        w = self.watch(self.srv.rv)
        self.srv.wait_for(lambda: self.srv.open_watches() == 2, 2)
        self.srv.touch("n-1")
        self.srv.touch("n-1")
        self.assertEqual(len(w.events(None, seconds=1.5)), 1)
        self.assertEqual(w.ended, "timeout")
        self.srv.on(Fault("watch", end_after=2), watch=True)
        w = self.watch(self.list_rv)
        self.assertEqual(len(w.events(None, seconds=5)), 2)
        self.assertEqual(w.ended, "end")
        self.srv.on(Fault("watch", cut_after=1), watch=True)
        w = self.watch(self.list_rv)
        self.assertEqual(len(w.events(None, seconds=5)), 1)
        self.assertEqual(w.ended, "eof")

    def test_bytes_split_one_at_a_time(self):
        self.srv.watch_chunk = 1
        self.srv.watch_split = 1
        w = self.watch(self.list_rv)

        def change(n):   # without its image list: 6 KiB, some 40,000 TLS records of one byte
            go_unknown(n)
            del n["status"]["images"]
        self.srv.touch("n-1", change)
        ev = w.events(1, seconds=90)
        self.assertEqual(ev[0]["object"]["metadata"]["annotations"]["example.com/note"][:4], "caf\u00e9")
        self.assertEqual(set(w.chunks), {1}, "one byte per chunk")
        self.assertLessEqual(max(w.reads[1:]), 40, "one byte per send, a TLS record each")
        self.srv.watch_chunk = "random"
        self.srv.watch_split = "random"
        w = self.watch(self.list_rv)
        self.assertEqual(w.events(1, seconds=30)[0]["object"]["metadata"]["name"], "n-1")
        self.assertGreater(len(set(w.chunks)), 5)
        self.srv.watch_chunk, self.srv.watch_split = "coalesce", None
        self.srv.touch("n-2")
        w = self.watch(self.list_rv)
        self.assertEqual(len(w.events(2)), 2)
        self.assertEqual(len(w.chunks), 1, "two events in one chunk")

    def test_raw_events(self):
        self.srv.on(Fault("watch", raw=[{"type": "ADDED", "object": {"kind": "Pod", "apiVersion": "v1",
                                                                    "metadata": {"name": "p", "resourceVersion": "1"}}}]),
                    watch=True)
        w = self.watch(self.list_rv)
        self.assertEqual(w.events(1)[0]["object"]["kind"], "Pod")
        self.srv.watch_send(b'{"type":"MODIFIED","object":{"kind":"Node",,}}\n')
        w.events(0)
        with self.assertRaises(ValueError):
            w.events(1)
        # a stream opened after a raw item never sees it
        w2 = self.watch(self.list_rv)
        self.srv.touch("n-0")
        self.assertEqual(w2.events(1)[0]["type"], "MODIFIED")

    def test_query_and_permission(self):
        w = self.watch(self.list_rv, extra="&labelSelector=a")
        self.assertEqual(w.status, 400)
        w = self.watch("abc")
        self.assertEqual(w.status, 400)
        self.srv.verbs = {"get", "list", "patch", "delete"}
        w = self.watch(self.list_rv)
        self.assertEqual(w.status, 403)
        w = Stream(self.srv, "watch=1&resourceVersion=%d" % self.list_rv, token="nope")
        self.addCleanup(w.close)
        self.assertEqual(w.status, 401)
        # parameters in any order, "true" as well as "1"
        self.srv.verbs.add("watch")
        w = Stream(self.srv, "timeoutSeconds=1&allowWatchBookmarks=true&resourceVersion=%d&watch=true" % self.list_rv)
        self.addCleanup(w.close)
        self.assertEqual(w.status, 200)

    def test_flood_in_order_and_node_kept(self):
        w = self.watch(self.list_rv)
        self.srv.wait_for(lambda: self.srv.open_watches() == 1, 2)
        t = threading.Thread(target=self.srv.flood, args=("n-3", 3000))
        t.start()
        ev = w.events(3000, seconds=60)
        t.join(30)
        self.assertEqual(len(ev), 3000)
        rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in ev]
        self.assertEqual(rvs, list(range(self.list_rv + 1, self.list_rv + 3001)))
        self.assertEqual(ev[-1]["object"]["metadata"]["annotations"]["example.com/seq"], "2999")
        n = self.srv.node("n-3")
        self.assertEqual(n["metadata"]["resourceVersion"], str(self.list_rv + 3000))
        self.assertEqual(n["metadata"]["annotations"]["example.com/seq"], "2999")


if __name__ == "__main__":
    unittest.main()
