"""Conflict retry: a change refused because the node changed since it was listed (a failed test
op, 422; a failed delete precondition, 409) reads that node again, decides again with the pass's
summary, and tries again with the new resourceVersion, a few times within the pass, so a node
another client changes often is not starved. Each test fails on a binary that leaves it for the
next pass."""
import unittest

import fixtures
from harness import ANN, Case, healthy, our_taint, ready, uk
from test_run import come_back

LABEL = fixtures.DEFAULT_PRUNE_LABEL


def cluster(*extra):
    return fixtures.etcd_servers(3) + [ready("self")] + list(extra) + healthy(3)


def relabel(n):
    n["metadata"].setdefault("labels", {})["example.com/churn"] = n["metadata"]["resourceVersion"]


def churn(name, times, mutate=relabel, method=("PATCH", "DELETE")):
    """A hook: before each of the first `times` writes to `name`, another client changes it."""
    left = [times]

    def hook(srv, req):
        if req.method in method and req.node_name == name and left[0] > 0:
            left[0] -= 1
            srv.touch(name, mutate)
    return hook


class Conflict(Case):
    def test_must_fail_taint_retried_within_the_pass(self):
        self.server(cluster(uk("busy", since=400)))
        self.srv.before(churn("busy", 1))
        r = self.once(taint_after=60)
        self.assertRc(r, 0)
        self.assertEqual(len(self.oos_taints("busy")), 1, "not tainted within the pass" + self.ctx(r))
        patches = self.srv.reqs("PATCH", node="busy")
        self.assertEqual([q.status for q in patches], [422, 200], self.ctx(r))
        # the retry tests the resourceVersion it read again, not the listed one
        self.assertNotEqual(patches[1].json()[0]["value"], self.listed_rv("busy"))
        self.assertEqual(patches[1].json()[0]["op"], "test")
        self.assertLog(r, "Tainted busy")

    def test_must_fail_clear_retried_within_the_pass(self):
        self.server(cluster(ready("back", since=20, taints=[our_taint()], annotations={ANN: fixtures.rfc3339(400)})))
        self.srv.before(churn("back", 2))
        r = self.once(taint_after=60)
        self.assertRc(r, 0)
        self.assertEqual(self.oos_taints("back"), [], "our taint kept after the pass" + self.ctx(r))
        self.assertEqual([q.status for q in self.srv.reqs("PATCH", node="back")], [422, 422, 200], self.ctx(r))

    def test_must_fail_delete_retried_within_the_pass(self):
        self.server(cluster(uk("gone", since=400, labels={LABEL: "true"})))
        self.srv.before(churn("gone", 1))
        r = self.once(taint_after=60, prune_after=300)
        self.assertRc(r, 0)
        self.assertIsNone(self.srv.node("gone"), "not deleted within the pass" + self.ctx(r))
        self.assertEqual([q.status for q in self.srv.reqs("DELETE", node="gone")], [409, 200], self.ctx(r))

    def test_decided_again_on_the_fresh_facts(self):
        # it came back between the list and the patch: the retry sees Ready and does nothing
        self.server(cluster(uk("back", since=400)))
        self.srv.before(churn("back", 1, mutate=come_back))
        r = self.once(taint_after=60)
        self.assertRc(r, 0)
        self.assertEqual(self.oos_taints("back"), [], self.ctx(r))
        self.assertEqual([q.status for q in self.srv.reqs("PATCH", node="back")], [422], self.ctx(r))
        self.assertLog(r, "back changed since it was listed; nothing to do now")

    def test_must_fail_many_unneeded_retries_are_not_a_flood(self):
        # Six nodes come back between the list and their patches (as after a leader change,
        # when the other replica got there first): three lines name a node, one counts the rest.
        names = ["back-%d" % i for i in range(6)]
        self.server(cluster(*([uk(n, since=400) for n in names] + healthy(8, prefix="more"))))
        for n in names:
            self.srv.before(churn(n, 1, mutate=come_back))
        r = self.once(taint_after=60)
        self.assertRc(r, 0)
        for n in names:
            self.assertEqual(self.oos_taints(n), [], self.ctx(r))
        said = [ln for ln in r.lines if "changed since it was listed; nothing to do now" in ln]
        self.assertEqual(len(said), 3, "a line per node is a flood" + self.ctx(r))
        self.assertLog(r, "3 more nodes changed since they were listed; nothing to do now for them either")

    def test_bounded_when_it_never_stops_changing(self):
        self.server(cluster(uk("storm-of-writes", since=400)))
        self.srv.before(churn("storm-of-writes", 1000))
        r = self.once(taint_after=60)
        self.assertRc(r, 0)
        n = len(self.srv.reqs("PATCH", node="storm-of-writes"))
        self.assertGreaterEqual(n, 2, self.ctx(r))
        self.assertLessEqual(n, 5, "retries are bounded" + self.ctx(r))
        self.assertLog(r, "kept changing")


if __name__ == "__main__":
    unittest.main()
