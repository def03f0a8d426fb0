"""Dry runs. --dry-run (NODE_RECOVERY_DRY_RUN=true): everything decided, no write sent, `Would ...`
lines, the exit status a real pass would have. --dry-run=server: every write carries dryRun=All,
the DELETE's in its DeleteOptions body too (the stand-in, like kube-apiserver, ignores a DELETE's
query when it has a body), and nothing changes."""
import unittest

import fixtures
from harness import ANN, Case, healthy, our_taint, ready, uk

LABEL = fixtures.DEFAULT_PRUNE_LABEL


def cluster():
    return fixtures.etcd_servers(3) + [ready("self"), uk("agent-1", since=120), uk("gone-1", since=400, labels={LABEL: "true"}),
                                       ready("back-1", since=20, taints=[our_taint()], annotations={ANN: fixtures.rfc3339(400)})] + healthy(3)


class DryRun(Case):
    def test_must_fail_client_dry_run_sends_no_write(self):
        self.server(cluster())
        r = self.once(taint_after=60, prune_after=300, extra=["--dry-run"])
        self.assertRc(r, 0)
        self.assertNoActions(r)
        self.assertEqual([q.method for q in self.srv.reqs()], ["GET"], self.ctx(r))
        self.assertLog(r, "Would taint agent-1 node.kubernetes.io/out-of-service=nodeshutdown:NoExecute: not reporting for")
        self.assertLog(r, "Would delete gone-1: not reporting for")
        self.assertLog(r, "Would clear back-1")
        self.assertNoLog(r, "Tainted")
        self.assertLog(r, "dry run")

    def test_client_dry_run_from_env(self):
        self.server(cluster())
        r = self.once(taint_after=60, env={"NODE_RECOVERY_DRY_RUN": "true"})
        self.assertRc(r, 0)
        self.assertNoActions(r)
        self.assertLog(r, "Would taint agent-1")

    def test_client_dry_run_exit_status_as_a_real_pass(self):
        # a refused delete (quorum) fails a real pass: the dry run says so too; a storm held
        # back an action: exit 1 as well
        self.server(fixtures.etcd_servers(2) + [ready("self"), uk("gone-1", since=400, labels={LABEL: "true"})] + healthy(2))
        r = self.once(taint_after=60, prune_after=300, extra=["--dry-run"])
        self.assertRc(r, 1)
        self.assertNoActions(r)
        self.assertLog(r, "Not deleting gone-1")
        self.assertLog(r, "Would taint gone-1")

    def test_must_fail_server_dry_run_carries_dry_run_all(self):
        self.server(cluster())
        r = self.once(taint_after=60, prune_after=300, extra=["--dry-run=server"])
        self.assertRc(r, 0)
        writes = [q for q in self.srv.reqs() if q.method != "GET"]
        self.assertEqual(sorted(q.node_name for q in writes), ["agent-1", "back-1", "gone-1"], self.ctx(r))
        for q in writes:
            self.assertEqual(q.qdict().get("dryRun"), "All", "%s %s without ?dryRun=All%s" % (q.method, q.target, self.ctx(r)))
        (d,) = [q for q in writes if q.method == "DELETE"]
        self.assertEqual(d.json().get("dryRun"), ["All"], "the DELETE's body must carry dryRun" + self.ctx(r))
        # nothing changed: the node is still there, untainted, our taint still on back-1
        for n in ("agent-1", "gone-1", "back-1"):
            self.assertEqual(self.srv.node(n), self.listed[n], "node %s changed%s" % (n, self.ctx(r)))
        self.assertLog(r, "Would taint agent-1")
        self.assertLog(r, "Would delete gone-1")
        self.assertLog(r, "Would clear back-1")
        self.assertLog(r, "the server accepted it")

    def test_bad_dry_run_value(self):
        self.server([uk("agent-1", since=120)])
        for v in ("--dry-run=All", "--dry-run=yes", "--dry-run="):
            with self.subTest(flag=v):
                r = self.once(taint_after=60, extra=[v] if v != "--dry-run=" else ["--dry-run=x"])
                self.assertRc(r, 2)
                self.assertEqual(len(r.lines), 1, self.ctx(r))
                self.assertIn("--dry-run", r.lines[0])
                self.assertEqual(self.srv.connections, 0)
        r = self.once(taint_after=60, extra=["--dry-run=server"])
        self.assertRc(r, 0)
        self.assertEqual(self.oos_taints("agent-1"), [], self.ctx(r))


if __name__ == "__main__":
    unittest.main()
