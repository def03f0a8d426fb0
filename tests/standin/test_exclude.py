"""The opt-out label (default github-runner.exadev.io/no-recovery=true): never tainted, never
deleted, our own taint still cleared once Ready; counted in the storm guard; logged once per
node while it needs action, not every pass. Exit 0: an opted-out node is no failure."""
import unittest

import fixtures
from harness import ANN, Case, healthy, our_taint, ready, uk

NO = "github-runner.exadev.io/no-recovery"
LABEL = fixtures.DEFAULT_PRUNE_LABEL


def cluster(*extra):
    return fixtures.etcd_servers(3) + [ready("self")] + list(extra) + healthy(4)


class Exclude(Case):
    def test_must_fail_excluded_not_tainted(self):
        self.server(cluster(uk("keep", since=400, labels={NO: "true"}), uk("agent-1", since=400)))
        r = self.once(taint_after=60)
        self.assertRc(r, 0)
        self.assertUntouched("keep", r)
        self.assertTainted("agent-1", r)  # the pass ran and would have tainted
        self.assertLog(r, "Not tainting keep: it carries %s=true" % NO)

    def test_must_fail_excluded_not_deleted(self):
        self.server(cluster(uk("keep", since=400, labels={NO: "true", LABEL: "true"}),
                            uk("agent-1", since=400, labels={LABEL: "true"})))
        r = self.once(taint_after=60, prune_after=300)
        self.assertRc(r, 0)
        self.assertUntouched("keep", r)
        self.assertDeleted("agent-1", r)
        self.assertLog(r, "Not deleting keep: it carries %s=true" % NO)

    def test_other_values_do_not_opt_out(self):
        vals = ["false", "True", "yes", ""]
        self.server(cluster(*[uk("agent-%d" % i, since=400, labels={NO: v}) for i, v in enumerate(vals)])
                    + healthy(4, prefix="more"))
        r = self.once(taint_after=60)
        self.assertRc(r, 0)
        for i in range(len(vals)):
            self.assertTainted("agent-%d" % i, r)

    def test_our_taint_still_cleared(self):
        self.server(cluster(ready("back", since=20, labels={NO: "true"}, taints=[our_taint()],
                                  annotations={ANN: fixtures.rfc3339(400)})))
        r = self.once(taint_after=60)
        self.assertRc(r, 0)
        self.assertEqual(self.oos_taints("back"), [], self.ctx(r))
        self.assertLog(r, "Cleared back")

    def test_configured_key(self):
        self.server(cluster(uk("keep", since=400, labels={"example.com/hands-off": "true"}),
                            uk("default-key", since=400, labels={NO: "true"})))
        r = self.once(taint_after=60, env={"NODE_RECOVERY_EXCLUDE_LABEL": "example.com/hands-off"})
        self.assertRc(r, 0)
        self.assertUntouched("keep", r)
        self.assertTainted("default-key", r)

    def test_counted_in_the_storm(self):
        # 5 of 9 Unknown, 4 of them opted out: still a storm, so agent-1 is held back
        nodes = fixtures.etcd_servers(3) + [ready("self")] + [
            uk("keep-%d" % i, since=400, labels={NO: "true"}) for i in range(4)] + [uk("agent-1", since=400)]
        self.server(nodes)
        r = self.once(taint_after=60)
        self.assertRc(r, 1)
        self.assertNoActions(r)
        self.assertLog(r, "Storm guard engaged: 5 of 9 nodes are Unknown")

    def test_logged_once_while_excluded(self):
        self.server(cluster(uk("keep", since=400, labels={NO: "true"})))
        p, errp = self.start_run(taint_after=60, extra=["--poll", "1"])
        self.assertTrue(self.srv.wait_for(lambda: len(self.srv.reqs(list_only=True)) >= 4, 15))
        r = self.stop_run(p, errp)
        self.assertEqual(r.count("Not tainting keep"), 1, "one line, not one per pass" + self.ctx(r))
        self.assertUntouched("keep", r)


if __name__ == "__main__":
    unittest.main()
