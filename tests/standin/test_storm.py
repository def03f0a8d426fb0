"""The storm guard: more Unknown nodes than the limit (default 50% of the listed nodes, never
below 1) means no new taint and no delete, clears still go through, and a cooldown after it
lifts. Every node counts, our own included. Each test here fails on a binary without the guard.
"""
import time
import unittest

import fixtures
from harness import ANN, Case, healthy, our_taint, ready, uk
from test_run import come_back

LABEL = fixtures.DEFAULT_PRUNE_LABEL


def fleet(unknown, total, since=400, labels=None):
    """total nodes: 3 Ready etcd servers, `unknown` Unknown agents past any threshold (self is
    Ready here), the rest Ready agents."""
    nodes = fixtures.etcd_servers(3) + [ready("self")]
    nodes += [uk("agent-%02d" % i, since=since, labels=labels) for i in range(unknown)]
    nodes += healthy(total - len(nodes))
    assert len(nodes) == total
    return nodes


class Storm(Case):
    def test_must_fail_15_of_20_unknown_nothing_tainted(self):
        self.server(fleet(15, 20))
        r = self.once(taint_after=60)
        self.assertRc(r, 1)  # an action was held back
        self.assertNoActions(r)
        self.assertLog(r, "Storm guard engaged: 15 of 20 nodes are Unknown, more than the limit of 10")
        self.assertEqual(r.count("Storm guard"), 1, "one line for the guard" + self.ctx(r))
        self.assertNoLog(r, "Tainted")

    def test_must_fail_15_of_20_unknown_nothing_deleted(self):
        self.server(fleet(15, 20, labels={LABEL: "true"}))
        r = self.once(taint_after=60, prune_after=300)
        self.assertRc(r, 1)
        self.assertNoActions(r)
        self.assertEqual(self.srv.reqs("DELETE"), [])
        self.assertLog(r, "Storm guard engaged")

    def test_3_of_20_unknown_those_3_tainted(self):
        self.server(fleet(3, 20))
        r = self.once(taint_after=60)
        self.assertRc(r, 0)
        for i in range(3):
            self.assertTainted("agent-%02d" % i, r)
        self.assertEqual(len(self.srv.mutating()), 3, self.ctx(r))
        self.assertNoLog(r, "Storm guard")

    def test_unknown_own_node_and_young_unknown_count(self):
        # 10 of 20 Unknown is within 50%; our own node and nodes not yet past the threshold
        # make it 12: the guard counts every Unknown node
        nodes = fleet(10, 20)
        nodes = [uk("self", since=7200) if n["metadata"]["name"] == "self" else n for n in nodes]
        nodes = nodes[:-1] + [uk("young", since=5)]
        self.server(nodes)
        r = self.once(taint_after=60)
        self.assertRc(r, 1)
        self.assertNoActions(r)
        self.assertLog(r, "Storm guard engaged: 12 of 20 nodes are Unknown, more than the limit of 10")

    def test_clears_go_through_a_storm(self):
        nodes = fleet(15, 20)
        back = [ready("back-%d" % i, since=20, taints=[our_taint()], annotations={ANN: fixtures.rfc3339(400)})
                for i in range(2)]
        self.server(nodes[:-2] + back)
        r = self.once(taint_after=60)
        self.assertRc(r, 1)
        for n in ("back-0", "back-1"):
            self.assertEqual(self.oos_taints(n), [], self.ctx(r))
            self.assertLog(r, "Cleared %s" % n)
        self.assertEqual(sorted(q.node_name for q in self.srv.mutating()), ["back-0", "back-1"], self.ctx(r))

    def test_count_limit(self):
        self.server(fleet(4, 20))
        r = self.once(taint_after=60, extra=["--max-unknown", "3"])
        self.assertRc(r, 1)
        self.assertNoActions(r)
        self.assertLog(r, "Storm guard engaged: 4 of 20 nodes are Unknown, more than the limit of 3")
        r = self.once(taint_after=60, env={"NODE_RECOVERY_MAX_UNKNOWN": "4"})
        self.assertRc(r, 0)
        self.assertEqual(len(self.srv.mutating()), 4, self.ctx(r))

    def test_one_dead_node_of_one_is_handled(self):
        # floor(50% x 1) is 0: the limit is never below 1
        self.server([uk("lonely", since=400)])
        r = self.once(taint_after=60)
        self.assertRc(r, 0)
        self.assertTainted("lonely", r)

    def test_100_percent_turns_it_off(self):
        self.server(fleet(15, 20))
        r = self.once(taint_after=60, extra=["--max-unknown", "100%"])
        self.assertRc(r, 0)
        self.assertEqual(len(self.srv.mutating()), 15, self.ctx(r))
        self.assertNoLog(r, "Storm guard")

    def test_cooldown_holds_then_lifts(self):
        # a storm, then 12 of the 15 come back: the 3 still Unknown are not tainted until
        # the cooldown has passed, and the guard says so once per change, not per pass
        self.server(fleet(15, 20))
        p, errp = self.start_run(taint_after=60, extra=["--poll", "1", "--storm-cooldown", "4"])
        self.assertTrue(self.srv.wait_for(lambda: len(self.srv.reqs(list_only=True)) >= 2, 15))
        for i in range(3, 15):
            self.srv.touch("agent-%02d" % i, come_back)
        t_back = time.monotonic()
        self.assertTrue(self.srv.wait_for(lambda: len(self.srv.reqs(list_only=True)) >= 5, 15))
        early = [q for q in self.srv.mutating()]
        tainted = self.srv.wait_for(lambda: len(self.srv.mutating()) >= 3, 20)
        t_taint = time.monotonic()
        self.assertTrue(self.srv.wait_for(lambda: len(self.srv.reqs(list_only=True)) >= 12, 20))
        r = self.stop_run(p, errp)
        self.assertEqual(early, [], "tainted within the cooldown" + self.ctx(r))
        self.assertTrue(tainted, "not tainted after the cooldown" + self.ctx(r))
        self.assertGreaterEqual(t_taint - t_back, 3.5, "tainted before the 4 s cooldown" + self.ctx(r))
        for i in range(3):
            self.assertTainted("agent-%02d" % i, r)
        self.assertEqual(r.count("Storm guard engaged"), 1, self.ctx(r))
        self.assertEqual(r.count("Storm guard cooling down"), 1, self.ctx(r))
        self.assertEqual(r.count("Storm guard lifted"), 1, self.ctx(r))
        self.assertLog(r, "Storm guard lifted: 3 of 20 nodes are Unknown, within the limit of 10")


class StormSettings(Case):
    def setUp(self):
        super().setUp()
        self.server(fleet(1, 5))

    def refused(self, names, **kw):
        r = self.once(timeout=20, **kw)
        self.assertRc(r, 2)
        self.assertEqual(len(r.lines), 1, "exactly one line on a refusal" + self.ctx(r))
        self.assertTrue(any(n in r.lines[0] for n in names), "the line names the setting" + self.ctx(r))
        self.assertEqual(self.srv.connections, 0, "nothing may reach the server" + self.ctx(r))

    def accepted(self, extra):
        r = self.once(timeout=20, extra=extra)
        self.assertRc(r, 0)

    def test_bad_max_unknown(self):
        for v in ("0", "150%", "-1", "5%%", "0%", "%", "ten", "50 %", "1e3"):
            with self.subTest(max_unknown=v):
                self.refused(("--max-unknown",), extra=["--max-unknown", v])
        self.accepted(["--max-unknown", "5"])
        self.accepted(["--max-unknown=100%"])

    def test_bad_max_unknown_from_env(self):
        self.refused(("NODE_RECOVERY_MAX_UNKNOWN",), env={"NODE_RECOVERY_MAX_UNKNOWN": "101%"})
        self.accepted([])

    def test_bad_storm_cooldown(self):
        for v in ("1x", "-5", "2.5", "", "soon"):
            with self.subTest(cooldown=v):
                self.refused(("--storm-cooldown",), extra=["--storm-cooldown", v])
        self.accepted(["--storm-cooldown", "0"])


if __name__ == "__main__":
    unittest.main()
