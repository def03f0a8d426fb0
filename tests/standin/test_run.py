"""`run` mode: passes every poll, exit 0 on SIGTERM/SIGINT, the token kept out of argv and logs."""
import signal
import time
import unittest

import fixtures
from harness import ANN, Case, ready, uk


def cluster():
    return fixtures.etcd_servers(3) + [uk("self", since=7200), ready("agent-1")]


def go_unknown(since):
    def m(n):
        for c in n["status"]["conditions"]:
            if c["type"] == "Ready":
                c["status"] = "Unknown"
                c["reason"] = "NodeStatusUnknown"
                c["lastTransitionTime"] = fixtures.rfc3339(since)
    return m


def come_back(n):
    for c in n["status"]["conditions"]:
        if c["type"] == "Ready":
            c["status"] = "True"
            c["reason"] = "KubeletReady"
            c["lastTransitionTime"] = fixtures.rfc3339(0)


class RunMode(Case):
    def wait_lists(self, k, timeout):
        ok = self.srv.wait_for(lambda: len(self.srv.reqs(list_only=True)) >= k, timeout)
        self.assertTrue(ok, "only %d lists within %ss" % (len(self.srv.reqs(list_only=True)), timeout))

    def test_token_file_reread_within_a_minute_without_a_401(self):
        # The kubelet rotates a projected token well before the old one expires, so the file
        # must be read again on a clock, not only after a 401. Only the client's file changes
        # here: the server keeps accepting the old token, so no 401 can be what prompts it.
        self.server([ready("node-a")])
        p, errp = self.start_run(extra=["--poll", "1"])
        self.wait_lists(1, 10)
        self.write_token("rotated-by-the-kubelet")
        ok = self.srv.wait_for(lambda: any(q.header("Authorization") == "Bearer rotated-by-the-kubelet"
                                           for q in self.srv.reqs()), 75)
        r = self.stop_run(p, errp)
        self.assertTrue(ok, "the rotated token was not used within 75 s\n" + self.ctx(r))
        first_new = next(i for i, q in enumerate(self.srv.reqs())
                         if q.header("Authorization") == "Bearer rotated-by-the-kubelet")
        self.assertNotIn(401, [q.status for q in self.srv.reqs()[:first_new]], self.ctx(r))
        self.assertNotIn("rotated-by-the-kubelet", r.stderr)

    def test_exits_0_on_sigterm(self):
        self.server(cluster())
        p, err = self.start_run(extra=["--poll", "1"])
        self.wait_lists(2, 10)
        r = self.stop_run(p, err, signal.SIGTERM)
        self.assertEqual(r.rc, 0, "exit status on SIGTERM" + self.ctx(r))

    def test_exits_0_on_sigint(self):
        self.server(cluster())
        p, err = self.start_run(extra=["--poll", "1"])
        self.wait_lists(1, 10)
        r = self.stop_run(p, err, signal.SIGINT)
        self.assertEqual(r.rc, 0, "exit status on SIGINT" + self.ctx(r))

    def test_polls_and_takes_a_stale_node_within_one_poll_then_clears_it(self):
        self.server(cluster())
        p, err = self.start_run(extra=["--poll", "2"])
        self.wait_lists(1, 10)
        self.assertEqual(self.srv.mutating(), [])
        self.srv.touch("agent-1", go_unknown(120))
        t0 = time.monotonic()
        ok = self.srv.wait_for(lambda: self.oos_taints("agent-1"), 6)
        took = time.monotonic() - t0
        self.assertTrue(ok, "not tainted within 6 s at --poll 2")
        self.assertLess(took, 2 + 2.0, "tainted %.1fs after going stale, poll is 2s" % took)
        self.srv.touch("agent-1", come_back)
        ok = self.srv.wait_for(lambda: not self.oos_taints("agent-1"), 6)
        self.assertTrue(ok, "not cleared within 6 s at --poll 2")
        self.assertNotIn(ANN, self.srv.node("agent-1")["metadata"].get("annotations", {}))
        # the next list shows the clearing pass finished: a stop abandons a request in flight
        self.wait_lists(len(self.srv.reqs(list_only=True)) + 1, 6)
        r = self.stop_run(p, err)
        self.assertEqual(r.rc, 0, self.ctx(r))
        self.assertLog(r, "Tainted agent-1 ")
        self.assertLog(r, "Cleared agent-1: Ready again")
        self.assertIn("starting", r.lines[0])
        self.assertEqual(r.count("starting"), 1, "one start-up line" + self.ctx(r))

    def test_token_not_in_process_arguments_nor_logs(self):
        self.server(cluster())
        p, err = self.start_run(extra=["--poll", "1"])
        self.wait_lists(1, 10)
        with open("/proc/%d/cmdline" % p.pid, "rb") as f:
            cmd = f.read()
        self.assertNotIn(self.TOKEN.encode(), cmd)
        with open("/proc/%d/environ" % p.pid, "rb") as f:
            self.assertNotIn(self.TOKEN.encode(), f.read())
        self.srv.touch("agent-1", go_unknown(300))
        self.srv.wait_for(lambda: self.oos_taints("agent-1"), 5)
        self.srv.set_token("the-server-wants-another")  # now every request fails with 401
        # a third list begins the next pass, so the first one's failure has been logged
        self.wait_lists(len(self.srv.reqs(list_only=True)) + 3, 10)
        with open("/proc/%d/cmdline" % p.pid, "rb") as f:
            self.assertNotIn(self.TOKEN.encode(), f.read())
        r = self.stop_run(p, err)
        self.assertEqual(r.rc, 0, self.ctx(r))
        self.assertLog(r, "failed")  # the 401s were reported ...
        self.assertNotIn(self.TOKEN, r.stderr)  # ... without the token
        self.assertNotIn("the-server-wants-another", r.stderr)
        self.assertTrue(self.oos_taints("agent-1"), self.ctx(r))

    def test_survives_server_dropping_idle_connections(self):
        self.server(cluster(), idle_timeout=0.3)
        p, err = self.start_run(extra=["--poll", "1"])
        self.wait_lists(3, 10)
        self.srv.touch("agent-1", go_unknown(120))
        ok = self.srv.wait_for(lambda: self.oos_taints("agent-1"), 6)
        r = self.stop_run(p, err)
        self.assertTrue(ok, "not tainted after idle connections were dropped" + self.ctx(r))
        self.assertEqual(r.rc, 0)
        self.assertNoLog(r, "failed")


if __name__ == "__main__":
    unittest.main()
