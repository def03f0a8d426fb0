"""The taint pass, one test per row of the reference behaviour."""
import unittest

import fixtures
from harness import ANN, ANN_ESC, OOS, Case, healthy, our_taint, oos_taint, ready, uk


def cluster(*extra):
    return fixtures.etcd_servers(3) + [uk("self", since=7200)] + list(extra)


class Taint(Case):
    def test_tainted_past_threshold(self):
        self.server(cluster(uk("agent-1", since=120), ready("agent-2")))
        r = self.once(taint_after=60)
        self.assertRc(r, 0)
        self.assertTainted("agent-1", r, since=120)
        self.assertEqual([q.node_name for q in self.srv.mutating()], ["agent-1"], self.ctx(r))
        self.assertLogShape(r)
        self.assertIn("starting", r.lines[0], "first line says starting" + self.ctx(r))

    def test_tainted_with_content_length_bodies(self):
        self.server(cluster(uk("agent-1", since=120)), chunked=False)
        r = self.once(taint_after=60)
        self.assertRc(r, 0)
        self.assertTainted("agent-1", r)

    def test_tainted_with_tiny_chunks(self):
        # 7-byte chunks: every token of the body is split across reads
        self.server([uk("agent-1", since=120), ready("agent-2")], chunk_size=7)
        r = self.once(taint_after=60)
        self.assertRc(r, 0)
        self.assertTainted("agent-1", r)

    def test_not_before_threshold(self):
        self.server(cluster(uk("agent-1", since=30)))
        r = self.once(taint_after=60)
        self.assertRc(r, 0)
        self.assertUntouched("agent-1", r)
        self.assertNoActions(r)

    def test_nothing_to_do_logs_nothing(self):
        self.server(cluster(uk("agent-1", since=30), ready("agent-2")))
        r = self.once(taint_after=60)
        self.assertRc(r, 0)
        rest = [ln for ln in r.lines if "starting" not in ln]
        self.assertEqual(rest, [], "a pass with nothing to do logs nothing" + self.ctx(r))

    def test_not_ready_false(self):
        self.server(cluster(fixtures.node("agent-1", ready="False", since=7200)))
        r = self.once(taint_after=60)
        self.assertRc(r, 0)
        self.assertUntouched("agent-1", r)

    def test_not_without_ready_condition(self):
        self.server(cluster(fixtures.node("agent-1", ready=None)))
        r = self.once(taint_after=60)
        self.assertRc(r, 0)
        self.assertUntouched("agent-1", r)

    def test_not_its_own_node(self):
        self.server(cluster(uk("agent-1", since=120)))
        r = self.once(taint_after=60)
        self.assertRc(r, 0)
        self.assertUntouched("self", r)
        self.assertTainted("agent-1", r)  # proves the pass ran and would have tainted

    def test_not_its_own_node_from_env(self):
        self.server(cluster(uk("agent-1", since=120)))
        r = self.once(taint_after=60, self_node=None, env={"NODE_RECOVERY_SELF_NODE": "agent-1"})
        self.assertRc(r, 0)
        self.assertUntouched("agent-1", r)

    def test_not_an_operators_out_of_service_taint(self):
        self.server(cluster(
            uk("agent-1", since=600, taints=[oos_taint()]),
            uk("agent-2", since=600, taints=[{"key": "dedicated", "value": "ci", "effect": "NoSchedule"},
                                             oos_taint(value="", effect="NoSchedule")]),
            uk("agent-3", since=600, taints=[{"key": OOS, "effect": "NoExecute"}])))
        r = self.once(taint_after=60)
        self.assertRc(r, 0)
        for n in ("agent-1", "agent-2", "agent-3"):
            self.assertUntouched(n, r)

    def test_not_twice(self):
        self.server(cluster(uk("agent-1", since=600, taints=[our_taint()],
                               annotations={ANN: fixtures.rfc3339(300)}),
                            uk("agent-2", since=120)))
        r = self.once(taint_after=60)
        self.assertRc(r, 0)
        self.assertUntouched("agent-1", r)
        self.assertTainted("agent-2", r)
        r2 = self.once(taint_after=60)
        self.assertRc(r2, 0)
        self.assertEqual(len(self.srv.reqs("PATCH")), 1, "second pass patched again" + self.ctx(r2))
        self.assertTainted("agent-2")

    def test_cleared_once_ready_keeping_other_taints_and_annotations(self):
        other1 = {"key": "dedicated", "value": "runners", "effect": "NoSchedule"}
        other2 = {"key": "example.com/drain", "value": "x", "effect": "NoExecute", "timeAdded": fixtures.rfc3339(900)}
        n = ready("agent-1", since=20, taints=[other1, our_taint(), other2],
                  annotations={ANN: fixtures.rfc3339(400), "keep.example.io/me": "yes"})
        self.server(cluster(n))
        before = self.srv.node("agent-1")
        r = self.once(taint_after=60)
        self.assertRc(r, 0)
        after = self.srv.node("agent-1")
        self.assertEqual(after["spec"].get("taints"), [other1, other2], self.ctx(r))
        want_ann = dict(before["metadata"]["annotations"])
        del want_ann[ANN]
        self.assertEqual(after["metadata"]["annotations"], want_ann)
        self.assertEqual(after["metadata"]["labels"], before["metadata"]["labels"])
        p = self.srv.reqs("PATCH", node="agent-1")
        self.assertEqual(len(p), 1)
        self.assertPatchShape(p[0])
        self.assertLog(r, "Cleared agent-1: Ready again; out-of-service taint and annotation removed")

    def test_cleared_when_ours_is_the_only_taint(self):
        self.server(cluster(ready("agent-1", since=20, taints=[our_taint()],
                                  annotations={ANN: fixtures.rfc3339(400)})))
        r = self.once(taint_after=60)
        self.assertRc(r, 0)
        after = self.srv.node("agent-1")
        self.assertEqual(after["spec"].get("taints") or [], [], self.ctx(r))
        self.assertNotIn(ANN, after["metadata"].get("annotations") or {})
        self.assertLog(r, "Cleared agent-1")

    def test_operators_taint_never_cleared(self):
        self.server(cluster(ready("agent-1", since=20, taints=[oos_taint()]),
                            ready("agent-2", since=20, taints=[our_taint()],
                                  annotations={"other.example.io/applied-at": fixtures.rfc3339(60)})))
        r = self.once(taint_after=60)
        self.assertRc(r, 0)
        self.assertUntouched("agent-1", r)
        self.assertUntouched("agent-2", r)

    def test_works_when_taints_or_annotations_absent(self):
        self.server(cluster(uk("bare", since=120, no_taints=True, no_annotations=True),
                            uk("no-taints", since=120, no_taints=True),
                            uk("no-annotations", since=120,
                               taints=[{"key": "dedicated", "value": "ci", "effect": "NoSchedule"}],
                               no_annotations=True)) + healthy(2))
        self.assertNotIn("taints", self.srv.node("bare")["spec"])
        self.assertNotIn("annotations", self.srv.node("bare")["metadata"])
        r = self.once(taint_after=60)
        self.assertRc(r, 0)
        for n in ("bare", "no-taints", "no-annotations"):
            self.assertTainted(n, r)
        self.assertEqual(list(self.srv.node("bare")["metadata"]["annotations"]), [ANN])
        self.assertEqual(self.srv.node("no-annotations")["spec"]["taints"][0]["key"], "dedicated")

    def test_annotation_key_json_pointer_escaped(self):
        self.server(cluster(uk("agent-1", since=120)))
        r = self.once(taint_after=60)
        self.assertRc(r, 0)
        self.assertTainted("agent-1", r)
        ops = self.srv.reqs("PATCH", node="agent-1")[0].json()
        paths = [o.get("path") for o in ops]
        self.assertIn("/metadata/annotations/" + ANN_ESC, paths, "annotation added with ~1 escaping: %r" % ops)

    def test_annotation_key_configurable(self):
        key = "ops.example.io/oos-tainted-at"
        self.server(cluster(uk("agent-1", since=120), uk("agent-2", since=120)))
        r = self.once(taint_after=60, extra=["--annotation", key])
        self.assertRc(r, 0)
        self.assertTainted("agent-1", r, annotation=key)
        self.assertNotIn(ANN, self.srv.node("agent-1")["metadata"]["annotations"])
        ops = self.srv.reqs("PATCH", node="agent-1")[0].json()
        self.assertIn("/metadata/annotations/ops.example.io~1oos-tainted-at", [o.get("path") for o in ops])

    def test_changed_between_list_and_patch(self):
        self.server(cluster(uk("agent-1", since=120)))

        def touch(srv, req):
            if req.method == "PATCH" and req.node_name == "agent-1" and not getattr(srv, "_done", False):
                srv._done = True
                srv.touch("agent-1", lambda n: n["metadata"]["labels"].update({"touched": "yes"}))
        self.srv.before(touch)
        r = self.once(taint_after=60)
        self.assertRc(r, 0)
        # the stale patch is refused; the node is read again and the patch sent again, testing
        # the new resourceVersion (test_conflict.py has the rest of the retry)
        patches = self.srv.reqs("PATCH")
        self.assertEqual([q.status for q in patches], [422, 200], self.ctx(r))
        self.assertEqual(patches[0].json()[0]["value"], self.listed_rv("agent-1"))
        self.assertNotEqual(patches[1].json()[0]["value"], self.listed_rv("agent-1"), "retried on stale facts" + self.ctx(r))
        self.assertEqual(len(self.oos_taints("agent-1")), 1, self.ctx(r))
        self.assertEqual(self.srv.reqs("DELETE"), [])

    def _refused_with_422(self, message, details):
        from apiserver import Reply, status_body
        self.server(cluster(uk("agent-1", since=120)))
        self.srv.on(Reply(422, status_body(422, "Invalid", message, details)), method="PATCH", node="agent-1")
        r = self.once(taint_after=60)
        # must-fail: a 422 that is not a failed resourceVersion test is not "changed" and
        # not ignored; it fails the pass and the log carries the API's own words
        self.assertRc(r, 1)
        self.assertFalse(any("changed since it was listed" in ln for ln in r.lines), self.ctx(r))
        self.assertTrue(any("Tainting agent-1 failed" in ln and message in ln for ln in r.lines), self.ctx(r))
        self.assertEqual(self.oos_taints("agent-1"), [])

    def test_patch_refused_by_validation_fails_with_its_message(self):
        self._refused_with_422(
            'Node "agent-1" is invalid: spec.taints[0].effect: Unsupported value: "NoExecute2"',
            {"name": "agent-1", "kind": "Node", "causes": [
                {"reason": "FieldValueNotSupported", "message": 'Unsupported value: "NoExecute2"',
                 "field": "spec.taints[0].effect"}]})

    def test_patch_denied_by_admission_fails_with_its_message(self):
        self._refused_with_422(
            "nodes \"agent-1\" is forbidden: ValidatingAdmissionPolicy 'no-oos' with binding "
            "'no-oos' denied request: out-of-service taints are applied by hand here",
            {"name": "agent-1", "kind": "nodes"})

    def test_patch_forbidden_fails_the_pass(self):
        self.server(cluster(uk("agent-1", since=120)), verbs=("get", "list"))
        self.reviews_refused()  # else the permission check stops it first (test_access)
        r = self.once(taint_after=60)
        self.assertRc(r, 1)
        self.assertEqual(self.oos_taints("agent-1"), [])
        self.assertEqual([q.status for q in self.srv.reqs("PATCH")], [403], "a 403 is not retried" + self.ctx(r))
        self.assertTrue(any("failed" in ln and "agent-1" in ln for ln in r.lines), self.ctx(r))

    def test_one_nodes_failure_does_not_stop_others(self):
        from apiserver import Reply, status_body
        self.server(cluster(uk("agent-1", since=120), uk("agent-2", since=120), uk("agent-3", since=120))
                    + healthy(2))
        self.srv.on(Reply(500, status_body(500, "InternalError", "Internal error occurred: etcdserver: request timed out")),
                    times=None, method="PATCH", node="agent-2")
        r = self.once(taint_after=60)
        self.assertRc(r, 1)
        self.assertTainted("agent-1", r)
        self.assertTainted("agent-3", r)
        self.assertEqual(self.oos_taints("agent-2"), [])
        self.assertTrue(any("failed" in ln and "agent-2" in ln for ln in r.lines),
                        "a line saying agent-2's patch failed" + self.ctx(r))
        self.assertLessEqual(len(self.srv.reqs("PATCH", node="agent-2")), 6, "retries are bounded")


if __name__ == "__main__":
    unittest.main()
