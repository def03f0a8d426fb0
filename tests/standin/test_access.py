"""The permission check at start: before the first pass, one SelfSubjectAccessReview per
permission the settings need (list nodes; patch unless a client dry run; delete when pruning,
unless a client dry run). A denied one ends the start with exit 2 and one line naming the user
(SelfSubjectReview), the verb, the resource and the file in deploy/ that grants it, before any
node is listed or changed. A review that cannot be made (403, 404, a garbled answer) is logged
in one line and the watcher goes on."""
import signal
import unittest

import fixtures
from apiserver import SSAR_PATH, SSR_PATH, Reply, status_body
from harness import Case, healthy, ready, uk

LABEL = fixtures.DEFAULT_PRUNE_LABEL
USER = "system:serviceaccount:noderecover:noderecover"


def cluster():
    return fixtures.etcd_servers(3) + [ready("self"), uk("agent-1", since=120),
                                       uk("gone-1", since=400, labels={LABEL: "true"})] + healthy(3)


class Access(Case):
    def server(self, nodes=(), **kw):
        kw.setdefault("username", USER)
        return super().server(nodes, **kw)

    def asked(self):
        """The verbs the access reviews asked about, in order."""
        return [q.json()["spec"]["resourceAttributes"]["verb"] for q in self.srv.reqs(reviews=True)
                if q.path == SSAR_PATH]

    def assertDenied(self, r, verb, file):
        self.assertRc(r, 2)
        lines = [ln for ln in r.lines if "Permission check" in ln]
        self.assertEqual(len(lines), 1, self.ctx(r))
        for word in (USER, " %s nodes" % verb, file, "not starting"):
            self.assertIn(word, lines[0], self.ctx(r))
        # nothing about nodes was asked, let alone changed: the check comes before the first pass
        self.assertEqual(self.srv.reqs(), [], "requests after a denied permission" + self.ctx(r))
        self.assertEqual(len(r.lines), 2, "the start line and the denial only" + self.ctx(r))

    def test_all_allowed_asks_list_patch_and_events_then_runs(self):
        self.server(cluster())
        r = self.once(taint_after=60)
        self.assertRc(r, 0)
        self.assertEqual(self.asked(), ["list", "patch", "create"], self.ctx(r))
        self.assertNoLog(r, "Permission check")
        self.assertTainted("agent-1", r)
        # nodes cluster-wide in the core group, then Events in default; nothing else was asked
        ras = []
        for q in self.srv.reqs(reviews=True):
            if q.path == SSAR_PATH:
                self.assertEqual(q.json()["apiVersion"], "authorization.k8s.io/v1")
                ra = q.json()["spec"]["resourceAttributes"]
                ras.append((ra["group"], ra["resource"], ra.get("namespace")))
        self.assertEqual(ras, [("", "nodes", None), ("", "nodes", None), ("events.k8s.io", "events", "default")])
        self.assertEqual([q for q in self.srv.reqs(reviews=True) if q.path == SSR_PATH], [],
                         "who we are is asked only to name a denial" + self.ctx(r))

    def test_must_fail_denied_patch_exits_2_before_any_patch(self):
        self.server(cluster(), verbs=("get", "list"))
        r = self.once(taint_after=60)
        self.assertDenied(r, "patch", "deploy/noderecover.yaml")
        self.assertEqual(self.oos_taints("agent-1"), [])

    def test_must_fail_denied_patch_in_run_exits_2(self):
        self.server(cluster(), verbs=("get", "list"))
        p, errp = self.start_run(taint_after=60)
        try:
            rc = p.wait(timeout=30)
        except Exception:
            self.stop_run(p, errp, signal.SIGKILL)
            self.fail("run kept going after a denied permission")
        self.assertEqual(rc, 2)
        with open(errp) as f:
            self.assertIn("may not patch nodes", f.read())
        self.assertEqual(self.srv.reqs(), [])

    def test_must_fail_denied_list_exits_2(self):
        self.server(cluster(), verbs=())
        r = self.once(taint_after=60)
        self.assertDenied(r, "list", "deploy/noderecover.yaml")
        self.assertEqual(self.asked(), ["list"], "the first denial ends the check" + self.ctx(r))

    def test_must_fail_denied_delete_with_pruning_exits_2(self):
        self.server(cluster(), verbs=("get", "list", "patch"))
        r = self.once(taint_after=60, prune_after=300)
        self.assertDenied(r, "delete", "deploy/noderecover-prune.yaml")
        self.assertIsNotNone(self.srv.node("gone-1"))
        self.assertEqual(self.asked(), ["list", "patch", "delete"], self.ctx(r))

    def test_no_delete_without_pruning_runs(self):
        self.server(cluster(), verbs=("get", "list", "patch"))
        r = self.once(taint_after=60)
        self.assertRc(r, 0)
        self.assertEqual(self.asked(), ["list", "patch", "create"], self.ctx(r))
        self.assertNoLog(r, "Permission check")
        self.assertTainted("agent-1", r)
        self.assertTainted("gone-1", r)

    def test_denied_patch_with_pruning_names_the_prune_file(self):
        # with pruning on, the file to apply is the pruning one, whichever verb is missing
        self.server(cluster(), verbs=("get", "list", "delete"))
        r = self.once(taint_after=60, prune_after=300)
        self.assertDenied(r, "patch", "deploy/noderecover-prune.yaml")

    def test_client_dry_run_needs_only_list(self):
        self.server(cluster(), verbs=("list",))
        r = self.once(taint_after=60, prune_after=300, extra=["--dry-run"])
        self.assertRc(r, 0)
        self.assertEqual(self.asked(), ["list"], self.ctx(r))
        self.assertNoLog(r, "Permission check")
        self.assertLog(r, "Would taint agent-1")
        self.assertLog(r, "Would delete gone-1")

    def test_must_fail_client_dry_run_still_needs_list(self):
        self.server(cluster(), verbs=())
        r = self.once(taint_after=60, extra=["--dry-run"])
        self.assertDenied(r, "list", "deploy/noderecover.yaml")

    def test_server_dry_run_needs_the_writes(self):
        self.server(cluster(), verbs=("list", "patch"))
        r = self.once(taint_after=60, prune_after=300, extra=["--dry-run=server"])
        self.assertDenied(r, "delete", "deploy/noderecover-prune.yaml")
        self.server(cluster(), verbs=("list",))
        r = self.once(taint_after=60, extra=["--dry-run=server"])
        self.assertDenied(r, "patch", "deploy/noderecover.yaml")

    def test_review_404_or_403_is_logged_and_it_runs_on(self):
        # 404: an API server without the review; 403: a user who may not ask
        for status in (404, 403):
            with self.subTest(status=status):
                self.server(cluster())
                self.reviews_refused(status)
                r = self.once(taint_after=60)
                self.assertRc(r, 0)
                self.assertEqual(r.count("Permission check not made"), 1, self.ctx(r))
                self.assertLog(r, "HTTP %d" % status)
                self.assertTainted("agent-1", r)
                self.assertEqual(len([q for q in self.srv.reqs(reviews=True) if q.path == SSAR_PATH]), 1,
                                 "one unanswered review ends the check" + self.ctx(r))

    def test_garbled_review_is_logged_and_it_runs_on(self):
        for body in (b"<html>allowed</html>", b'{"status":{"allowed":"false"}}', b'{"status":{"allowed":true',
                     b'{"status":{"allowed":false,"allowed":true}}', b'{"status":{"allowed":true,"denied":true}}',
                     b"\xff\xfe", b""):
            with self.subTest(body=body):
                self.server(cluster(), verbs=("get", "list"))
                self.srv.on(Reply(201, body, content_type="application/json"), times=None, path=SSAR_PATH)
                r = self.once(taint_after=60)
                # an answer that cannot be read blocks nothing; the pass meets the 403 itself
                self.assertRc(r, 1)
                self.assertEqual(r.count("Permission check not made"), 1, self.ctx(r))
                self.assertLogShape(r)
                self.assertEqual(self.oos_taints("agent-1"), [])

    def test_user_unknown_is_said_generically(self):
        self.server(cluster(), verbs=("get", "list"))
        self.srv.on(Reply(404, status_body(404, "NotFound", "the server could not find the requested resource")),
                    times=None, path=SSR_PATH)
        r = self.once(taint_after=60)
        self.assertRc(r, 2)
        self.assertLog(r, "this service account/user may not patch nodes")
        self.assertEqual(self.srv.reqs(), [])

    def test_user_name_echoing_the_token_is_redacted(self):
        self.server(cluster(), verbs=("get", "list"), username="tok " + self.TOKEN + "\nFAKE line")
        r = self.once(taint_after=60)
        self.assertRc(r, 2)
        self.assertNotIn(self.TOKEN, r.stderr)
        for i in range(len(self.TOKEN) - 8 + 1):
            self.assertNotIn(self.TOKEN[i:i + 8], r.stderr, "a piece of the token is in the log" + self.ctx(r))
        self.assertLog(r, "tok [redacted]")
        self.assertLogShape(r)


if __name__ == "__main__":
    unittest.main()
