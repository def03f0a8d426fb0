"""SIGTERM and SIGINT end any wait within a second, even a request a peer keeps trickling.

A pod gets SIGKILL 30 s after SIGTERM; noderecover used to wait for the request in flight
(up to 595 s measured, or forever with a trickling peer). Now the request is abandoned:
`once` exits 1 (the pass did not finish), `run` logs that it stopped and exits 0. Each test
measures the time from the signal to the exit; the bound is 1.5 s.
"""
import signal
import subprocess
import time
import unittest

from apiserver import Fault
import test_faults
from test_faults import cluster
from trickle import TrickleProxy
from harness import Run

BOUND = 1.5


class Shutdown(test_faults.FaultCase):
    def spawn(self, mode, **kw):
        return self.start(mode, taint_after=60, prune_after=300, **kw)

    def signal_and_time(self, p, errp, sig):
        t0 = time.monotonic()
        p.send_signal(sig)
        try:
            rc = p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            rc = None
        took = time.monotonic() - t0
        with open(errp, "rb") as f:
            err = f.read().decode("utf-8", "replace")
        r = Run(p.args, rc, "", err, took)
        self.runs.append(r)
        print("shutdown %s after %s: %.2fs" % (signal.Signals(sig).name, self.id().split(".")[-1], took))
        self.assertIsNotNone(rc, "still running 20 s after the signal" + self.ctx(r))
        self.assertLessEqual(took, BOUND, "exit %.2fs after the signal%s" % (took, self.ctx(r)))
        self.assertNotIn(self.TOKEN, err)
        return r

    def trickle(self, start):
        px = TrickleProxy(self.srv.port, start=start, every=0.5).start()
        self.addCleanup(px.stop)
        self.url = px.url
        return px

    def wait_trickling(self, px):
        self.assertTrue(px.trickling.wait(20), "the proxy never began to trickle")
        time.sleep(2)

    def test_once_sigterm_during_trickled_handshake(self):
        self.server(cluster())
        px = self.trickle("handshake")
        p, errp = self.spawn("once")
        self.wait_trickling(px)
        r = self.signal_and_time(p, errp, signal.SIGTERM)
        self.assertRc(r, 1)
        self.assertNoActions(r)
        self.assertLog(r, "the pass did not finish")

    def test_once_sigint_during_trickled_head(self):
        self.server(cluster())
        px = self.trickle("response")
        p, errp = self.spawn("once")
        self.wait_trickling(px)
        r = self.signal_and_time(p, errp, signal.SIGINT)
        self.assertRc(r, 1)
        self.assertNoActions(r)
        self.assertLog(r, "the pass did not finish")

    def test_once_sigterm_during_trickled_body(self):
        self.server(cluster())
        self.srv.on(Fault("trickle", start=-100, every=0.5, seconds=300), times=None, list_only=True)
        p, errp = self.spawn("once")
        self.assertTrue(self.srv.wait_for(lambda: self.srv.reqs(list_only=True), 10))
        time.sleep(3)
        r = self.signal_and_time(p, errp, signal.SIGTERM)
        self.assertRc(r, 1)
        self.assertNoActions(r)
        self.assertLog(r, "the pass did not finish")

    def test_run_sigterm_during_trickled_head_exits_0(self):
        self.server(cluster())
        px = self.trickle("response")
        p, errp = self.spawn("run", extra=["--poll", "1"])
        self.wait_trickling(px)
        r = self.signal_and_time(p, errp, signal.SIGTERM)
        self.assertRc(r, 0)
        self.assertLog(r, "stopping on a signal")

    def test_run_sigterm_during_retry_after_wait_exits_0(self):
        # a 503 asking for 60 s: the wait is cut short too
        self.server(cluster())
        self.srv.on(Fault("status", status=503, reason="ServiceUnavailable", message="busy",
                          headers=[("Retry-After", "60")]), times=None, list_only=True)
        p, errp = self.spawn("run", extra=["--poll", "1"])
        self.assertTrue(self.srv.wait_for(lambda: self.srv.reqs(list_only=True), 10))
        time.sleep(2)
        r = self.signal_and_time(p, errp, signal.SIGTERM)
        self.assertRc(r, 0)


if __name__ == "__main__":
    unittest.main()
