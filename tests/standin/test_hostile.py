"""Well-formed but unusual input: many labels/taints/annotations, escapes, order, whitespace, skew.

Each would catch a reader that keeps a fixed handful of facts or compares raw bytes, in the
direction that matters: a control-plane node must still be refused, a taint not doubled."""
import unittest

import fixtures
from harness import ANN, OOS, Case, our_taint, ready, uk

LABEL = fixtures.DEFAULT_PRUNE_LABEL
YES = {LABEL: "true"}
CP = fixtures.CP_LABEL


def servers():
    return fixtures.etcd_servers(3) + [uk("self", since=7200)]


def many_labels(n, last):
    lab = {"pool.example.io/l%03d" % i: "v%d" % i for i in range(n)}
    lab.update(last)
    return lab


class Hostile(Case):
    def test_control_plane_label_after_300_others_still_refused(self):
        n = fixtures.node("cp-9", ready="Unknown", since=400)
        n["metadata"]["labels"] = many_labels(300, {LABEL: "true", CP: "true"})
        self.server(servers() + [n])
        r = self.once(taint_after=60, prune_after=300)
        self.assertNotDeleted("cp-9", r)
        self.assertRc(r, 1)

    def test_removable_label_after_300_others_still_found(self):
        n = fixtures.node("agent-1", ready="Unknown", since=400)
        n["metadata"]["labels"] = many_labels(300, YES)
        self.server(servers() + [n])
        r = self.once(taint_after=60, prune_after=300)
        self.assertRc(r, (0, 1))
        if r.rc == 0:
            self.assertDeleted("agent-1", r)
        else:  # a node it cannot read whole is not acted on, and says so
            self.assertEqual(self.srv.mutating(), [], self.ctx(r))

    def test_etcd_members_with_many_labels_still_counted(self):
        ss = fixtures.etcd_servers(3)
        for s in ss:
            s["metadata"]["labels"] = many_labels(200, s["metadata"]["labels"])
        self.server(ss + [uk("self", since=7200), uk("agent-1", since=400, labels=YES)])
        r = self.once(taint_after=60, prune_after=300)
        self.assertRc(r, 0)
        self.assertDeleted("agent-1", r)

    def test_out_of_service_taint_after_40_others_not_doubled(self):
        ts = [{"key": "pool.example.io/t%02d" % i, "value": "x", "effect": "NoSchedule"} for i in range(40)]
        self.server(servers() + [uk("agent-1", since=400, taints=ts + [fixtures.OOS_TAINT])])
        r = self.once(taint_after=60)
        self.assertRc(r, (0, 1))
        self.assertUntouched("agent-1", r)

    def test_clear_our_taint_after_40_others(self):
        ts = [{"key": "pool.example.io/t%02d" % i, "value": "x", "effect": "NoSchedule"} for i in range(40)]
        ann = {"pool.example.io/a%03d" % i: "v" for i in range(200)}
        ann[ANN] = fixtures.rfc3339(300)
        self.server(servers() + [ready("agent-1", since=10, taints=ts + [our_taint()] + ts[:0], annotations=ann)])
        r = self.once(taint_after=60)
        self.assertRc(r, (0, 1))
        n = self.srv.node("agent-1")
        if self.srv.mutating():
            self.assertEqual(n["spec"]["taints"], ts, self.ctx(r))
            self.assertNotIn(ANN, n["metadata"]["annotations"])
            self.assertEqual(len(n["metadata"]["annotations"]), len(self.listed["agent-1"]["metadata"]["annotations"]) - 1)
        else:
            self.assertRc(r, 1)  # not cleared: then the pass must say it failed

    def test_escaped_slash_in_control_plane_label_key(self):
        # JSON allows "\\/" for "/"; Go never writes it, a proxy might. The key is the same key.
        n = fixtures.node("cp-9", ready="Unknown", since=400, server=True, etcd=False, labels=YES)
        self.server(servers() + [n])
        self.srv.list_filter = lambda b: b.replace(b'"node-role.kubernetes.io/control-plane":',
                                                   b'"node-role.kubernetes.io\\/control-plane":')
        r = self.once(taint_after=60, prune_after=300)
        self.assertNotDeleted("cp-9", r)

    def test_unicode_escaped_label_value_true(self):
        # "\\u0074rue" is the string "true"
        self.server(servers() + [uk("agent-1", since=400, labels={LABEL: "true"}),
                                 fixtures.node("cp-9", ready="Unknown", since=400, server=True, etcd=False,
                                               labels={LABEL: "true"})])
        self.srv.list_filter = lambda b: b.replace(b'"node-role.kubernetes.io/control-plane":"true"',
                                                   b'"node-role.kubernetes.io/control-plane":"\\u0074rue"')
        r = self.once(taint_after=60, prune_after=300)
        self.assertNotDeleted("cp-9", r)
        self.assertDeleted("agent-1", r)

    def test_pretty_printed_list(self):
        self.server(servers() + [uk("agent-1", since=120), ready("agent-2")])
        self.srv.pretty = True
        r = self.once(taint_after=60, page_size=2)
        self.assertRc(r, 0)
        self.assertTainted("agent-1", r)

    def test_list_metadata_after_items(self):
        # kube-apiserver writes metadata first; JSON does not promise it. The continue must not be missed.
        self.server(servers() + [ready("agent-%d" % i) for i in range(6)] + [uk("zz-agent", since=120)])
        self.srv.metadata_last = True
        r = self.once(taint_after=60, page_size=3)
        self.assertRc(r, (0, 1))
        if r.rc == 0:
            self.assertTainted("zz-agent", r)
            self.assertEqual(len(self.srv.reqs(list_only=True)), 4, self.ctx(r))
        else:
            self.assertNoActions(r)

    def test_node_object_keys_in_another_order(self):
        n = uk("agent-1", since=120)
        self.server(servers() + [{"status": n["status"], "spec": n["spec"], "metadata": n["metadata"]}])
        r = self.once(taint_after=60)
        self.assertRc(r, 0)
        self.assertTainted("agent-1", r)

    def test_transition_in_the_future_is_not_stale(self):
        # clock skew: the control plane is ahead of this host
        self.server(servers() + [uk("agent-1", since=-3600)])
        r = self.once(taint_after=60)
        self.assertRc(r, (0, 1))
        self.assertUntouched("agent-1", r)

    def test_label_key_that_merely_contains_the_prune_label(self):
        self.server(servers() + [uk("agent-1", since=400, labels={"x" + LABEL: "true", LABEL + "x": "true"})])
        r = self.once(taint_after=60, prune_after=300)
        self.assertNotDeleted("agent-1", r)
        self.assertTainted("agent-1", r)

    def test_ready_word_inside_other_strings(self):
        # "Ready" appears in managedFields keys and in another condition's reason; only type=Ready counts
        n = fixtures.node("agent-1", ready=None, extra_conditions=[
            {"type": "NetworkUnavailable", "status": "Unknown", "reason": "Ready",
             "message": "type Ready status Unknown", "lastTransitionTime": fixtures.rfc3339(9000),
             "lastHeartbeatTime": fixtures.rfc3339(9000)}])
        self.server(servers() + [n])
        r = self.once(taint_after=60)
        self.assertRc(r, 0)
        self.assertUntouched("agent-1", r)


if __name__ == "__main__":
    unittest.main()
