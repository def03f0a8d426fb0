"""Time by the API server's clock (its Date header), and acting when a threshold is crossed."""
import re
import time
import unittest

import fixtures
from harness import Case, healthy, uk

HOUR = 3600
SKEW = re.compile(r"The local clock is (\d+)s (ahead of|behind) the API server's")


def skew_said(r, way):
    """The lines saying the local clock is about an hour `way` ("ahead of" or "behind") the
    server's: the Date has whole seconds and the host reads its clock a moment later, so on a
    loaded machine 3600 give or take a few (what is proved is an hour, not the second)."""
    return [ln for ln in r.lines if (m := SKEW.search(ln)) and m.group(2) == way and abs(int(m.group(1)) - HOUR) <= 5]


def cluster(*nodes):
    return fixtures.etcd_servers(3) + healthy(4) + list(nodes)


class Clock(Case):
    def test_server_an_hour_behind_does_not_taint_early(self):
        # Unknown for 120 s by the server's clock, 3720 s by the host's: a watcher going by
        # its own clock would taint at once (must-fail: the node must stay untainted).
        self.server(cluster(uk("agent-1", since=HOUR + 120)))
        self.srv.clock_offset = -HOUR
        r = self.once(taint_after=300)
        self.assertEqual(r.rc, 0, self.ctx(r))
        self.assertUntouched("agent-1", r)
        self.assertEqual(len(skew_said(r, "ahead of")), 1, self.ctx(r))

    def test_server_an_hour_ahead_taints_on_time(self):
        # Unknown for 400 s by the server's clock, in the future by the host's: a watcher
        # going by its own clock would never taint it.
        self.server(cluster(uk("agent-1", since=400 - HOUR)))
        self.srv.clock_offset = HOUR
        r = self.once(taint_after=300)
        self.assertEqual(r.rc, 0, self.ctx(r))
        # what is written (our annotation) is the server's time too: assertTainted checks it
        self.assertTainted("agent-1", r, since=400)
        self.assertEqual(len(skew_said(r, "behind")), 1, self.ctx(r))

    def test_skew_logged_once_while_it_stays(self):
        self.server(cluster())
        self.srv.clock_offset = -HOUR
        p, err = self.start_run(extra=["--poll", "1"])
        self.assertTrue(self.srv.wait_for(lambda: len(self.srv.reqs(list_only=True)) >= 3, 15))
        self.srv.clock_offset = 0
        n = len(self.srv.reqs(list_only=True))
        self.assertTrue(self.srv.wait_for(lambda: len(self.srv.reqs(list_only=True)) >= n + 2, 15))
        r = self.stop_run(p, err)
        self.assertEqual(len(skew_said(r, "ahead of")), 1, self.ctx(r))
        self.assertEqual(r.stderr.count("agrees with the API server's again"), 1, self.ctx(r))

    def test_no_readable_date_falls_back_to_the_local_clock_logged_once(self):
        for mode in ("none", "rfc850"):
            with self.subTest(mode=mode):
                self.server(cluster(uk("agent-1", since=400)))
                self.srv.date_mode = mode
                p, err = self.start_run(taint_after=300, extra=["--poll", "1"])
                self.assertTrue(self.srv.wait_for(lambda: len(self.srv.reqs(list_only=True)) >= 3, 15))
                r = self.stop_run(p, err)
                self.assertTainted("agent-1", r)
                self.assertEqual(r.stderr.count("no Date header noderecover can read"), 1, self.ctx(r))

    def test_acts_when_the_threshold_is_crossed_not_a_poll_later(self):
        # Poll 30 s; the node crosses its 10 s threshold about 3 s after the first pass. A loop
        # that only polls would taint it ~30 s later (must-fail).
        self.server(cluster(uk("agent-1", since=7)))
        t0 = time.monotonic()
        p, err = self.start_run(taint_after=10, extra=["--poll", "30"])
        ok = self.srv.wait_for(lambda: self.oos_taints("agent-1"), 20)
        took = time.monotonic() - t0
        r = self.stop_run(p, err)
        self.assertTrue(ok, "not tainted within 20 s with --poll 30" + self.ctx(r))
        print("  taint %.1fs after start, threshold crossed at ~3s" % took)


if __name__ == "__main__":
    unittest.main()
