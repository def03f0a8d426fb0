"""Slow and endless peers: every request has a deadline, each phase its own, and none restarts.

Attacks from the network path: a proxy with no key that forwards the server's bytes one at a time
(trickle.py), and a server that keeps a response alive without ever finishing it. Each used to
hold `once` forever (the only bound was a read timeout that restarted with every byte). Now
each ends the pass with one line naming the phase, exit 1, and no action on any node.
The handshake and head deadlines are tested at their real values (10 s, 30 s); the list page's
through the test-only NODERECOVER_TEST_DEADLINE_SCALE, which divides every limit.
"""
import socket
import threading
import unittest

from apiserver import Fault
import test_faults
from test_faults import cluster
from trickle import TrickleProxy

SCALE = {"NODERECOVER_TEST_DEADLINE_SCALE": "10"}


class SlowPeers(test_faults.FaultCase):
    def proxy(self, start, every):
        p = TrickleProxy(self.srv.port, start=start, every=every).start()
        self.addCleanup(p.stop)
        self.url = p.url
        return p

    def test_trickled_handshake_ends_at_10s(self):
        self.server(cluster())
        p = self.proxy("handshake", 0.5)
        r = self.once(taint_after=60, prune_after=300, timeout=45)
        self.fails_cleanly(r, words=("handshake with 127.0.0.1:%d not done after 10s" % p.port,))
        self.assertLess(r.seconds, 25, self.ctx(r))

    def test_trickled_response_head_ends_at_30s(self):
        # two requests meet it, each ending at 30 s: the permission check's review (which then
        # goes on without it) and the list
        self.server(cluster())
        p = self.proxy("response", 0.3)
        r = self.once(taint_after=60, prune_after=300, timeout=95)
        self.fails_cleanly(r, words=("response head from 127.0.0.1:%d not done after 30s" % p.port,))
        self.assertEqual(r.count("not done after 30s"), 2, self.ctx(r))
        self.assertLog(r, "Permission check not made")
        self.assertLess(r.seconds, 75, self.ctx(r))

    def test_trickled_list_page_ends_at_its_deadline(self):
        self.server(cluster())
        self.srv.on(Fault("trickle", start=-100, every=0.2, seconds=300), times=None, list_only=True)
        r = self.once(taint_after=60, prune_after=300, timeout=50, env=SCALE)
        self.fails_cleanly(r, words=("response from 127.0.0.1:%d not done after" % self.srv.port,))
        self.assertEqual(len(self.srv.reqs(list_only=True)), 1, "a timed-out list is not retried" + self.ctx(r))

    def test_trickled_patch_response_ends_at_30s_and_is_not_sent_again(self):
        self.server(cluster())
        self.srv.on(Fault("trickle", start=0, every=0.5, seconds=300), times=None, method="PATCH")
        r = self.once(taint_after=60, timeout=55)
        self.assertRc(r, 1)
        self.assertLog(r, "response head from 127.0.0.1:%d not done after 30s" % self.srv.port)
        self.assertLess(r.seconds, 45, self.ctx(r))
        # the patch went through on the server, but a write already sent is not sent again
        self.assertEqual(len(self.srv.reqs("PATCH")), 1, self.ctx(r))
        self.assertNotIn(self.TOKEN, r.stderr)

    def test_patch_answered_200_then_trickled_ends_at_30s(self):
        # the status says the change was made; the body that never ends is dropped at 30 s
        self.server(cluster())
        self.srv.on(Fault("trickle", start=-1, every=0.5, seconds=300), times=None, method="PATCH")
        r = self.once(taint_after=60, timeout=55)
        self.assertLess(r.seconds, 45, self.ctx(r))
        self.assertEqual(len(self.srv.reqs("PATCH")), 1, self.ctx(r))
        self.assertTainted("agent-1", r)

    def test_endless_chunk_size_zeros_refused_by_their_length(self):
        self.server(cluster())
        self.srv.on(Fault("endless", seconds=120), times=None, list_only=True)
        r = self.once(taint_after=60, prune_after=300, timeout=40)
        self.fails_cleanly(r, words=("chunk size line too long",))
        self.assertLess(r.seconds, 20, self.ctx(r))

    def test_endless_chunk_extension_refused_by_its_length(self):
        self.server(cluster())
        self.srv.on(Fault("endless", data=b"5;" + b"x" * 4094, seconds=120), times=None, list_only=True)
        r = self.once(taint_after=60, prune_after=300, timeout=40)
        self.fails_cleanly(r, words=("chunk size line too long",))

    def test_run_keeps_its_passes_on_time_behind_a_trickling_path(self):
        # each pass fails at the handshake deadline (1 s at the test scale) and the next runs
        self.server(cluster())
        p = self.proxy("handshake", 0.5)
        proc, errp = self.start_run(extra=["--poll", "1"], env=SCALE)
        ok = self.srv.wait_for(lambda: open(errp, "rb").read().count(b"not done after 1s") >= 3, 15)
        r = self.stop_run(proc, errp)
        self.assertTrue(ok, "fewer than 3 passes in 15 s" + self.ctx(r))
        self.assertLog(r, "handshake with 127.0.0.1:%d not done after 1s" % p.port)
        self.assertEqual(r.rc, 0, self.ctx(r))
        self.assertNoActions(r)

    def test_retry_after_past_the_list_deadline_is_not_waited_for(self):
        # 60 s asked, the list's 600 s is 60 s at the test scale: nothing is left for the retry
        self.server(cluster())
        self.srv.on(Fault("status", status=429, reason="TooManyRequests", message="slow down",
                          headers=[("Retry-After", "60")]), times=None, list_only=True)
        r = self.once(taint_after=60, timeout=40, env=SCALE)
        self.fails_cleanly(r, words=("asked to wait 60s",))
        self.assertLess(r.seconds, 10, self.ctx(r))

    def test_plain_http_server_named_as_such(self):
        ls = socket.socket()
        ls.bind(("127.0.0.1", 0))
        ls.listen(4)
        ls.settimeout(0.2)
        stop = threading.Event()
        self.addCleanup(ls.close)
        self.addCleanup(stop.set)

        def serve():
            while not stop.is_set():
                try:
                    c, _ = ls.accept()
                except OSError:
                    continue
                try:
                    c.settimeout(5)
                    c.recv(4096)
                    c.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\n"
                              b"Connection: close\r\n\r\n400 Bad Request")
                except OSError:
                    pass
                c.close()
        threading.Thread(target=serve, daemon=True).start()
        self.server(cluster())
        self.url = "https://127.0.0.1:%d" % ls.getsockname()[1]
        r = self.once(taint_after=60, timeout=30)
        self.assertRc(r, 1)
        self.assertLog(r, "answered in plain HTTP")
        self.assertNoLog(r, "does not speak TLS 1.2")
        self.assertNoActions(r)


if __name__ == "__main__":
    unittest.main()
