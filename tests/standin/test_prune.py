"""The prune pass and its quorum floor, one test per row of the reference behaviour.

Thresholds throughout: taint after 60 s, prune after 300 s. The candidate has been Unknown
for 400 s unless a test says otherwise.
"""
import unittest

import fixtures
from apiserver import Reply, status_body
from harness import Case, healthy, ready, uk
from test_run import go_unknown

LABEL = fixtures.DEFAULT_PRUNE_LABEL
YES = {LABEL: "true"}


def cluster(*extra, servers=3):
    return fixtures.etcd_servers(servers) + [uk("self", since=7200, labels=YES)] + list(extra)


class Prune(Case):
    def prune(self, **kw):
        kw.setdefault("taint_after", 60)
        kw.setdefault("prune_after", 300)
        return self.once(**kw)

    def test_pruned_when_labelled_and_past(self):
        self.server(cluster(uk("agent-1", since=400, labels=YES), ready("agent-2", labels=YES)))
        r = self.prune()
        self.assertRc(r, 0)
        self.assertDeleted("agent-1", r, since=400)
        self.assertEqual([q.node_name for q in self.srv.mutating()], ["agent-1"], self.ctx(r))
        for n in ("server-0", "server-1", "server-2", "agent-2", "self"):
            self.assertIsNotNone(self.srv.node(n))

    def test_delete_in_place_of_taint_never_both(self):
        self.server(cluster(uk("agent-1", since=400, labels=YES)))
        r = self.prune()
        self.assertRc(r, 0)
        self.assertEqual([(q.method, q.node_name) for q in self.srv.mutating()], [("DELETE", "agent-1")],
                         "one DELETE and no PATCH" + self.ctx(r))
        self.assertNoLog(r, "Tainted agent-1")
        r2 = self.prune()
        self.assertRc(r2, 0)
        self.assertEqual(len(self.srv.mutating()), 1, "nothing more on the next pass" + self.ctx(r2))

    def test_pruned_even_when_already_tainted(self):
        from harness import ANN, our_taint
        self.server(cluster(uk("agent-1", since=400, labels=YES, taints=[our_taint()],
                               annotations={ANN: fixtures.rfc3339(340)})))
        r = self.prune()
        self.assertRc(r, 0)
        self.assertDeleted("agent-1", r)

    def test_not_unlabelled(self):
        self.server(cluster(uk("agent-1", since=400)))
        r = self.prune()
        self.assertRc(r, 0)
        self.assertNotDeleted("agent-1", r)
        self.assertTainted("agent-1", r)  # its pods still need recovering

    def test_not_when_label_is_not_true(self):
        vals = ["True", "yes", "false", "1", "", "true "]
        self.server(cluster(*[uk("agent-%d" % i, since=400, labels={LABEL: v}) for i, v in enumerate(vals)])
                    + healthy(4))
        r = self.prune()
        self.assertRc(r, 0)
        for i in range(len(vals)):
            self.assertNotDeleted("agent-%d" % i, r)
            self.assertTainted("agent-%d" % i, r)

    def test_not_below_prune_threshold(self):
        self.server(cluster(uk("agent-1", since=200, labels=YES)))
        r = self.prune()
        self.assertRc(r, 0)
        self.assertNotDeleted("agent-1", r)
        self.assertTainted("agent-1", r)

    def test_not_when_ready(self):
        self.server(cluster(ready("agent-1", since=7200, labels=YES)))
        r = self.prune()
        self.assertRc(r, 0)
        self.assertUntouched("agent-1", r)

    def test_not_when_not_ready(self):
        self.server(cluster(fixtures.node("agent-1", ready="False", since=7200, labels=YES)))
        r = self.prune()
        self.assertRc(r, 0)
        self.assertUntouched("agent-1", r)

    def test_not_its_own_node(self):
        self.server(cluster())
        r = self.prune()
        self.assertRc(r, 0)
        self.assertUntouched("self", r)

    def test_not_without_ready_condition(self):
        self.server(cluster(fixtures.node("agent-1", ready=None, labels=YES)))
        r = self.prune()
        self.assertRc(r, 0)
        self.assertUntouched("agent-1", r)

    def test_control_plane_refused_others_pruned(self):
        cp = fixtures.node("cp-9", ready="Unknown", since=400, server=True, etcd=False, labels=YES)
        self.server(cluster(cp, uk("agent-1", since=400, labels=YES)))
        r = self.prune()
        self.assertRc(r, 1)
        self.assertNotDeleted("cp-9", r)
        self.assertLog(r, "Not deleting cp-9: it is a control-plane node")
        self.assertDeleted("agent-1", r)
        self.assertTainted("cp-9", r)

    def test_etcd_member_refused_others_pruned(self):
        et = fixtures.node("etcd-9", ready="Unknown", since=400, etcd=True, labels=YES)
        self.server(cluster(et, uk("agent-1", since=400, labels=YES)))
        r = self.prune()
        self.assertRc(r, 1)
        self.assertNotDeleted("etcd-9", r)
        self.assertLog(r, "Not deleting etcd-9: it is an etcd member")
        self.assertDeleted("agent-1", r)
        self.assertTainted("etcd-9", r)

    def test_must_fail_a_refusal_is_logged_once_while_it_stands(self):
        # said again every pass, a standing refusal was most of a replica's log in the chaos
        # soak (2993 of 4116 lines in an hour); it is said once while its words stand, and
        # again when they change (the quorum's count)
        self.server(fixtures.etcd_servers(2) + [ready("self")] + healthy(4) + [uk("agent-1", since=400, labels=YES)])
        p, errp = self.start_run(taint_after=60, prune_after=300, extra=["--poll", "1"])
        lists = lambda: len(self.srv.reqs(list_only=True))  # noqa: E731
        self.assertTrue(self.srv.wait_for(lambda: lists() >= 4, 15), "4 passes")
        self.srv.touch("server-1", go_unknown(0))
        n = lists()
        self.assertTrue(self.srv.wait_for(lambda: lists() >= n + 4, 15), "4 more passes")
        r = self.stop_run(p, errp)
        for k in (2, 1):
            self.assertEqual(r.count("Not deleting agent-1: only %d Ready etcd members would remain" % k), 1,
                             "one line while %d stand, not one per pass%s" % (k, self.ctx(r)))
        self.assertNotDeleted("agent-1", r)

    def _kept_for_quorum(self, nodes, k):
        self.server(nodes + [uk("self", since=7200), uk("agent-1", since=400, labels=YES)])
        r = self.prune()
        self.assertRc(r, 1)
        self.assertNotDeleted("agent-1", r)
        self.assertEqual(self.srv.reqs("DELETE"), [], self.ctx(r))
        self.assertLog(r, "Not deleting agent-1: only %d Ready etcd members would remain, fewer than the 3 "
                          "a cluster needs to tolerate losing one" % k)
        self.assertTainted("agent-1", r)
        return r

    def test_kept_with_no_etcd_members(self):
        self._kept_for_quorum([ready("agent-%d" % i) for i in (2, 3, 4)], 0)

    def test_kept_with_two_etcd_members(self):
        self._kept_for_quorum(fixtures.etcd_servers(2), 2)

    def test_kept_with_one_of_three_not_ready(self):
        s = fixtures.etcd_servers(2) + [fixtures.node("server-2", ready="False", since=30, server=True)]
        self._kept_for_quorum(s, 2)

    def test_kept_with_one_of_three_unknown(self):
        s = fixtures.etcd_servers(2) + [fixtures.node("server-2", ready="Unknown", since=30, server=True)] + healthy(1)
        self._kept_for_quorum(s, 2)

    def test_kept_when_agents_stand_in_for_voters(self):
        # Ready agents and Ready control-plane nodes without the etcd label do not count
        s = fixtures.etcd_servers(2) + [ready("agent-%d" % i) for i in range(2, 7)] + [
            fixtures.node("cp-only", ready="True", server=True, etcd=False)]
        self._kept_for_quorum(s, 2)

    def test_pruned_with_three_voters_and_quorum_counted_across_pages(self):
        # candidate on the first page, the three etcd members on the last
        nodes = [uk("a-agent", since=400, labels=YES), ready("b-agent"), ready("c-agent"), ready("d-agent"),
                 uk("self", since=7200)] + fixtures.etcd_servers(3, prefix="z-server")
        self.server(nodes)
        r = self.prune(page_size=2)
        self.assertRc(r, 0)
        self.assertDeleted("a-agent", r)
        self.assertEqual(len(self.srv.reqs(list_only=True)), 4, self.ctx(r))

    def test_two_candidates_both_pruned(self):
        self.server(cluster(uk("agent-1", since=400, labels=YES), uk("agent-2", since=900, labels=YES)))
        r = self.prune()
        self.assertRc(r, 0)
        self.assertDeleted("agent-1", r)
        self.assertDeleted("agent-2", r)

    def test_changed_between_list_and_delete_kept(self):
        self.server(cluster(uk("agent-1", since=400, labels=YES)))

        def came_back(srv, req):
            if req.method == "DELETE" and not getattr(srv, "_done", False):
                srv._done = True
                srv.touch("agent-1")
        self.srv.before(came_back)
        r = self.prune()
        self.assertRc(r, 0)
        # the stale delete is refused (409); read again, still removable and Unknown: deleted
        # with the new resourceVersion (test_conflict.py has the rest of the retry)
        self.assertPreconditions_then_retried("agent-1", r)
        self.assertEqual(self.srv.reqs("PATCH", node="agent-1"), [], "delete in place of taint, never both" + self.ctx(r))

    def assertPreconditions_then_retried(self, name, r):
        dels = self.srv.reqs("DELETE", node=name)
        self.assertEqual([q.status for q in dels], [409, 200], self.ctx(r))
        listed = self.listed[name]["metadata"]
        self.assertEqual(dels[0].json()["preconditions"], {"uid": listed["uid"], "resourceVersion": listed["resourceVersion"]})
        self.assertNotEqual(dels[1].json()["preconditions"]["resourceVersion"], listed["resourceVersion"])
        return dels

    def test_uid_precondition_protects_a_reregistered_node(self):
        # the node was deleted and registered again under the same name: new uid
        self.server(cluster(uk("agent-1", since=400, labels=YES)))

        def reregistered(srv, req):
            if req.method == "DELETE" and not getattr(srv, "_done", False):
                srv._done = True
                srv.touch("agent-1", lambda n: n["metadata"].update(uid="9b0e4c3e-0000-4000-8000-000000000001"))
        self.srv.before(reregistered)
        r = self.prune()
        # the delete sent with the listed uid is refused: a node registered again is never
        # deleted on the old one's facts; it is read again and judged on its own
        dels = self.assertPreconditions_then_retried("agent-1", r)
        self.assertEqual(dels[1].json()["preconditions"]["uid"], "9b0e4c3e-0000-4000-8000-000000000001")

    def test_already_gone_is_not_a_failure(self):
        self.server(cluster(uk("agent-1", since=400, labels=YES)))

        def gone(srv, req):
            if req.method == "DELETE":
                with srv.lock:
                    srv.nodes.pop("agent-1", None)
        self.srv.before(gone)
        r = self.prune()
        self.assertRc(r, 0)
        self.assertEqual([q.status for q in self.srv.reqs("DELETE")], [404], self.ctx(r))
        self.assertLog(r, "agent-1 already gone")
        self.assertNoLog(r, "failed")

    def test_delete_forbidden_fails_the_pass(self):
        self.server(cluster(uk("agent-1", since=400, labels=YES)), verbs=("get", "list", "patch"))
        self.reviews_refused()  # else the permission check stops it first (test_access)
        r = self.prune()
        self.assertRc(r, 1)
        self.assertIsNotNone(self.srv.node("agent-1"))
        self.assertTrue(any("failed" in ln and "agent-1" in ln for ln in r.lines), self.ctx(r))

    def test_delete_server_error_fails_the_pass_others_still_pruned(self):
        self.server(cluster(uk("agent-1", since=400, labels=YES), uk("agent-2", since=400, labels=YES)))
        self.srv.on(Reply(500, status_body(500, "InternalError", "Internal error occurred")), times=None,
                    method="DELETE", node="agent-1")
        r = self.prune()
        self.assertRc(r, 1)
        self.assertIsNotNone(self.srv.node("agent-1"))
        self.assertDeleted("agent-2", r)
        self.assertLessEqual(len(self.srv.reqs("DELETE", node="agent-1")), 6, "retries are bounded")

    def test_prune_label_configurable(self):
        key = "pool.example.io/ephemeral"
        self.server(cluster(uk("agent-1", since=400, labels=YES), uk("agent-2", since=400, labels={key: "true"})))
        r = self.prune(extra=["--prune-label", key])
        self.assertRc(r, 0)
        self.assertDeleted("agent-2", r)
        self.assertNotDeleted("agent-1", r)
        self.assertTainted("agent-1", r)

    def test_prune_label_from_env(self):
        key = "pool.example.io/ephemeral"
        self.server(cluster(uk("agent-1", since=400, labels=YES), uk("agent-2", since=400, labels={key: "true"})))
        r = self.prune(env={"NODE_RECOVERY_PRUNE_LABEL": key})
        self.assertRc(r, 0)
        self.assertDeleted("agent-2", r)
        self.assertNotDeleted("agent-1", r)

    def test_pruning_off_when_unset(self):
        self.server(cluster(uk("agent-1", since=100000, labels=YES)))
        r = self.once(taint_after=60, env={"NODE_RECOVERY_PRUNE_AFTER_SECONDS": None})
        self.assertRc(r, 0)
        self.assertNotDeleted("agent-1", r)
        self.assertTainted("agent-1", r)

    def test_pruning_off_when_empty(self):
        self.server(cluster(uk("agent-1", since=100000, labels=YES)))
        r = self.once(taint_after=60, env={"NODE_RECOVERY_PRUNE_AFTER_SECONDS": ""})
        self.assertRc(r, 0)
        self.assertNotDeleted("agent-1", r)
        self.assertTainted("agent-1", r)

    def test_prune_after_from_env(self):
        self.server(cluster(uk("agent-1", since=400, labels=YES)))
        r = self.once(taint_after=60, env={"NODE_RECOVERY_PRUNE_AFTER_SECONDS": "300"})
        self.assertRc(r, 0)
        self.assertDeleted("agent-1", r)


if __name__ == "__main__":
    unittest.main()
