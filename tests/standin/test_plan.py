"""`noderecover plan`: one read of the cluster, nothing written, one row per node saying what a
pass would do now and why (or when it would act), then a summary line; --output json says the
same as one JSON document. Exit 0 when the cluster was read (even with actions due), 1 when it
was not, 2 for bad settings. It decides with the pass's own code, so each row's action is the
one `once` takes against the same cluster (checked here for the must-fail rows)."""
import json
import re
import unittest

import fixtures
from apiserver import Fault
from harness import ANN, Case, healthy, oos_taint, our_taint, ready, uk

LABEL = fixtures.DEFAULT_PRUNE_LABEL
NO = "github-runner.exadev.io/no-recovery"


def cluster():
    return fixtures.etcd_servers(3) + [
        ready("self"),
        uk("dead", since=400),                                         # taint now
        uk("soon", since=30),                                          # taint in 30s
        ready("back", since=20, taints=[our_taint()], annotations={ANN: fixtures.rfc3339(400)}),  # clear
        uk("gone", since=4000, labels={LABEL: "true"}),                # delete
        uk("member", since=4000, labels={LABEL: "true"}, etcd=True),   # delete refused: etcd
        uk("keep", since=400, labels={NO: "true"}),                    # excluded
        uk("theirs", since=400, taints=[oos_taint()]),                 # an operator's taint
    ] + healthy(8)


class Plan(Case):
    def plan(self, *extra, **kw):
        return self.once(argv=self.args("plan", extra=extra, **kw))

    def rows(self, r):
        """The table's rows by name: (ready, for, roles, action)."""
        lines = r.stdout.splitlines()
        self.assertTrue(lines and lines[0].startswith("NAME "), "no header" + self.ctx(r))
        out = {}
        for ln in lines[1:-1]:
            name, rdy, for_, roles, action = re.split(r"\s{2,}", ln, maxsplit=4)
            out[name] = (rdy, for_, roles, action)
        return out

    def assertNothingWritten(self, r):
        writes = [x for x in self.srv.reqs() if x.method in ("PATCH", "DELETE", "POST", "PUT")]
        self.assertEqual(writes, [], "plan wrote" + self.ctx(r))

    def test_must_fail_nothing_written(self):
        self.server(cluster())
        r = self.plan(taint_after=60, prune_after=3600)
        self.assertRc(r, 0)  # actions are due, and still exit 0: the cluster was read
        self.assertNothingWritten(r)
        self.assertEqual(len(self.srv.reqs(list_only=True)), 1, "one read of the cluster" + self.ctx(r))
        # the same cluster really has actions due: once takes them, so the check above can fail
        once = self.once(taint_after=60, prune_after=3600)
        self.assertTainted("dead", once)

    def test_rows(self):
        self.server(cluster())
        r = self.plan(taint_after=60, prune_after=3600)
        self.assertRc(r, 0)
        rows = self.rows(r)
        self.assertEqual(len(rows), 3 + 8 + 8, self.ctx(r))
        act = {n: v[3] for n, v in rows.items()}
        self.assertRegex(act["dead"], r"^taint now: not reporting for 6m4[0-9]s, taint threshold 1m0s$")
        self.assertRegex(act["soon"], r"^taint in (29|30|31)s$")
        self.assertTrue(act["back"].startswith("clear now"), act["back"])
        self.assertTrue(act["gone"].startswith("delete now: not reporting for 1h6m"), act["gone"])
        self.assertIn("delete refused: etcd member", act["member"])
        self.assertTrue(act["keep"].startswith("excluded: would taint"), act["keep"])
        self.assertEqual(act["theirs"], "none: an operator's out-of-service taint, theirs to remove")
        self.assertEqual(act["self"], "none: the node noderecover runs on is never acted on")
        self.assertEqual(act["healthy-0"], "none: Ready")
        self.assertEqual(rows["dead"][0::2], ("Unknown", "-"))
        self.assertRegex(rows["dead"][1], r"^6m4[0-9]s$")
        self.assertEqual(rows["self"][2], "self")
        self.assertEqual(rows["server-0"][2], "control-plane,etcd")
        self.assertEqual(rows["member"][2], "etcd,removable")
        self.assertEqual(rows["keep"][2], "excluded")
        self.assertEqual(rows["back"][2], "our-taint")
        self.assertEqual(rows["theirs"][2], "operator-taint")
        self.assertEqual(list(rows), sorted(rows), "rows sorted by name")
        summary = r.stdout.splitlines()[-1]
        self.assertIn("19 nodes, 6 Unknown, 0 unreadable; storm guard not engaged: 6 Unknown, limit 9 (--max-unknown 50%)", summary)
        self.assertIn("3 Ready etcd members, floor 3", summary)
        self.assertIn("by the API server's clock", summary)
        self.assertIn("a running watcher's storm cooldown is not known to plan", summary)

    def test_must_fail_storm_held(self):
        # 5 of 9 Unknown: a pass holds every taint; plan says so, and once indeed holds them
        nodes = fixtures.etcd_servers(3) + [ready("self")] + [uk("agent-%d" % i, since=400) for i in range(5)]
        self.server(nodes)
        r = self.plan(taint_after=60)
        self.assertRc(r, 0)
        act = {n: v[3] for n, v in self.rows(r).items()}
        for i in range(5):
            self.assertTrue(act["agent-%d" % i].startswith("held by the storm guard: would taint"), act)
        self.assertIn("storm guard engaged: 5 Unknown, limit 4 (--max-unknown 50%), no new taint and no delete",
                      r.stdout.splitlines()[-1])
        self.assertNothingWritten(r)
        once = self.once(taint_after=60)
        self.assertNoActions(once)

    def test_quorum_refusal_and_guard_off(self):
        nodes = fixtures.etcd_servers(2) + [ready("self"), uk("gone", since=4000, labels={LABEL: "true"})]
        self.server(nodes)
        r = self.plan("--max-unknown", "100%", taint_after=60, prune_after=3600)
        self.assertRc(r, 0)
        act = self.rows(r)["gone"][3]
        self.assertEqual(act, "taint now: not reporting for 1h6m, taint threshold 1m0s; delete refused: only 2 Ready etcd members, below the floor of 3")
        self.assertIn("storm guard off (--max-unknown 100%)", r.stdout.splitlines()[-1])

    def test_odd_names_and_unreadable_nodes(self):
        broken = uk("broken", since=400)
        del broken["metadata"]["uid"]
        nodes = fixtures.etcd_servers(3) + [ready("self"), ready("odd\x1b[31m\u00e9"), broken] + healthy(4)
        self.server(nodes)
        for out in ("table", "json"):
            r = self.plan("--output", out, taint_after=60)
            self.assertRc(r, 0)
            self.assertNotIn("\x1b", r.stdout, "an escape from the API reached the terminal" + self.ctx(r))
            self.assertNotIn("\u00e9", r.stdout)
            self.assertIn("odd?[31m??", r.stdout)
            if out == "json":
                nodes = {n["name"]: n for n in json.loads(r.stdout)["nodes"]}
                self.assertEqual(nodes["broken"]["action"], "none")
                self.assertIn("uid", nodes["broken"]["unreadable"])
                self.assertEqual(json.loads(r.stdout)["summary"]["unreadable"], 1)
            else:
                self.assertRegex(self.rows(r)["broken"][3], r"^none: unreadable \(.*uid.*\); nothing is done to it$")
                self.assertIn(", 1 unreadable;", r.stdout.splitlines()[-1])
        self.assertNothingWritten(r)

    def test_json(self):
        self.server(cluster())
        r = self.plan("--output", "json", taint_after=60, prune_after=3600)
        self.assertRc(r, 0)
        doc = json.loads(r.stdout)
        nodes = {n["name"]: n for n in doc["nodes"]}
        self.assertEqual(len(nodes), 19)
        self.assertEqual(nodes["dead"]["action"], "taint")
        self.assertEqual(nodes["dead"]["ready"], "Unknown")
        self.assertIn(nodes["dead"]["ready_for_seconds"], (400, 401, 402))
        self.assertEqual(nodes["soon"]["action"], "none")
        self.assertEqual(nodes["soon"]["due"], "taint")
        self.assertIn(nodes["soon"]["due_in_seconds"], (29, 30, 31))
        self.assertEqual(nodes["back"]["action"], "clear")
        self.assertEqual(nodes["gone"]["action"], "delete")
        self.assertEqual(nodes["member"]["delete_refused"], "etcd")
        self.assertEqual(nodes["member"]["roles"], ["etcd", "removable"])
        self.assertEqual(nodes["keep"]["excluded"], "taint")
        self.assertEqual(nodes["keep"]["action"], "none")
        self.assertEqual(doc["summary"]["nodes"], 19)
        self.assertEqual(doc["summary"]["unknown"], 6)
        self.assertEqual(doc["summary"]["storm_guard"], {"engaged": False, "limit": 9, "max_unknown": "50%",
                                                         "cooldown_known": False})
        self.assertEqual(doc["summary"]["etcd_ready"], 3)
        self.assertEqual(doc["summary"]["clock"], "server")
        self.assertNothingWritten(r)

    def test_json_from_the_environment(self):
        self.server(cluster())
        r = self.once(argv=self.args("plan", taint_after=60), env={"NODE_RECOVERY_OUTPUT": "json"})
        self.assertRc(r, 0)
        self.assertEqual(len(json.loads(r.stdout)["nodes"]), 19)

    def test_list_fails(self):
        self.server(cluster())
        self.srv.on(Fault("garbage_json"), times=None, list_only=True)
        r = self.plan(taint_after=60)
        self.assertRc(r, 1)
        self.assertEqual(r.stdout, "", "no plan from a list that failed" + self.ctx(r))
        self.assertLog(r, "Listing nodes failed")
        self.assertNothingWritten(r)

    def test_bad_output(self):
        self.server(cluster())
        r = self.plan("--output", "yaml", taint_after=60)
        self.assertRc(r, 2)
        self.assertEqual(self.srv.reqs(), [])


if __name__ == "__main__":
    unittest.main()
