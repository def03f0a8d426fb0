"""The watcher's side of the fence (issue 23, docs/fence.md "The watcher's rule"): a node whose
agent's Lease is armed gets the fence request and is tainted only once its agent has surely
fenced: S (the larger of the Lease's fence-safe-seconds and --fence-min-safe) after both the
request and the last change of the Lease the watcher saw, or once `noderecover.io/fencing` stood
the floor. Each must-fail test fails on a watcher that taints too soon, on an unreadable Lease,
without restarting its count on a renewal, under --fence=require without an agent, or in a
cluster more than half Unknown.

The agents here are Leases the test writes into the stand-in (small S: 3 s, floor 1 s); the
timings are bounded below by what the rule proves and loosely above (a loaded machine). The
Python model (refwatcher.py) has no fence: these tests are the binary's, skipped against it.
"""
import datetime
import time
import unittest

import fixtures
from harness import MODEL, Case, healthy, ready, uk
from test_run import come_back

NS = "fence"
SAFE = 3
FENCE = ["--fence-namespace", NS, "--fence-min-safe", "1s"]
REQUEST = "noderecover.io/fence-request"
FENCING = "noderecover.io/fencing"
EPS = 0.05   # the stand-in stamps requests as it reads them, the watcher counts from its answers


def micro(t=None):
    t = t or datetime.datetime.now(datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def agent_lease(node, safe=SAFE, **more):
    """The Lease an armed agent keeps (docs/fence.md "The agent's Lease"); more: annotations."""
    ann = {"noderecover.io/fence-address": "10.0.0.9:9466", "noderecover.io/fence-safe-seconds": str(safe),
           "noderecover.io/fence-action": "reboot"}
    ann.update(more)
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "noderecover-fence-" + node, "namespace": NS,
                         "labels": {"app.kubernetes.io/component": "fence-agent"}, "annotations": ann},
            "spec": {"holderIdentity": node, "leaseDurationSeconds": safe, "renewTime": micro()}}


def cluster(*extra):
    """3 Ready etcd servers, self and 4 agents Ready, and extra: a few Unknown nodes stay a minority."""
    return fixtures.etcd_servers(3) + [ready("self")] + healthy(4) + list(extra)


@unittest.skipIf(MODEL, "the Python model has no fence")
class FenceCase(Case):
    WATCH = True

    def fence_server(self, nodes, leases=(), **kw):
        srv = self.server(nodes, **kw)
        for lease in leases:
            srv.put_lease(lease)
        return srv

    def lease_reqs(self, node, method=None):
        path = "/apis/coordination.k8s.io/v1/namespaces/%s/leases/noderecover-fence-%s" % (NS, node)
        return [r for r in self.srv.reqs(method) if r.path == path]

    def taint_patches(self, node):
        return [r for r in self.srv.reqs("PATCH", node=node) if r.status == 200]

    def annotations(self, node):
        return self.srv.lease(NS, "noderecover-fence-" + node)["metadata"].get("annotations") or {}

    def run_fenced(self, extra=()):
        self.p, self.errp = self.start_run(taint_after=60, extra=FENCE + ["--poll", "3600"] + list(extra))

    def wait(self, cond, timeout, what):
        if not self.srv.wait_for(cond, timeout):
            r = self.stop_run(self.p, self.errp)
            self.fail("%s: not within %ss%s" % (what, timeout, self.ctx(r)))

    def logged(self, text):
        with open(self.errp, "rb") as f:
            return text.encode() in f.read()

    def test_must_fail_armed_node_requested_then_tainted_no_sooner_than_s(self):
        self.fence_server(cluster(uk("agent-1", since=120)), [agent_lease("agent-1")])
        self.run_fenced()
        self.wait(lambda: self.taint_patches("agent-1"), 30, "the taint")
        req = [r for r in self.lease_reqs("agent-1", "PATCH") if r.status == 200]
        self.assertEqual(len(req), 1, self.ctx())
        ops = req[0].json()
        self.assertEqual(ops[0]["op"], "test", "the request is tested on the Lease's resourceVersion")
        self.assertEqual((ops[1]["op"], ops[1]["path"]), ("add", "/metadata/annotations/noderecover.io~1fence-request"))
        taint = self.taint_patches("agent-1")[0]
        self.assertGreaterEqual(taint.time - req[0].time, SAFE - EPS, "tainted before S" + self.ctx())
        self.assertLess(taint.time - req[0].time, SAFE + 15, self.ctx())
        # safe only on a read sent after the safe time
        self.assertTrue([r for r in self.lease_reqs("agent-1", "GET") if r.time >= req[0].time + SAFE - EPS], self.ctx())
        # Ready again: cleared, and the request comes off its Lease
        self.srv.touch("agent-1", come_back)
        self.wait(lambda: REQUEST not in self.annotations("agent-1"), 20, "the request removed")
        self.wait(lambda: self.logged("Removed the fence request of agent-1: Ready again"), 10, "its line")
        r = self.stop_run(self.p, self.errp)
        self.assertLog(r, "Requested the fence of agent-1 on Lease fence/noderecover-fence-agent-1")
        self.assertLog(r, "Tainted agent-1 node.kubernetes.io/out-of-service=nodeshutdown:NoExecute: not reporting for")
        self.assertLog(r, "its fence agent has surely fenced")
        reasons = [e["reason"] for e in self.srv.posted if e["regarding"]["name"] == "agent-1"]
        self.assertIn("FenceRequested", reasons, self.ctx(r))
        self.assertIn("FencedTainted", reasons, self.ctx(r))
        self.assertNotIn("OutOfServiceTainted", reasons, self.ctx(r))

    def test_must_fail_a_renewal_after_the_request_delays_the_taint(self):
        self.fence_server(cluster(uk("agent-1", since=120)), [agent_lease("agent-1")])
        self.run_fenced()
        self.wait(lambda: REQUEST in self.annotations("agent-1"), 20, "the request")
        # the agent is alive: it renews (keeping the request) for 4 s more, then stops
        end = time.monotonic() + 4
        while time.monotonic() < end:
            self.srv.put_lease(agent_lease("agent-1"), mutate=lambda l: l["spec"].update(renewTime=micro()))
            last = time.monotonic()
            self.assertEqual(self.taint_patches("agent-1"), [], "tainted while its agent renews" + self.ctx())
            time.sleep(0.5)
        self.wait(lambda: self.taint_patches("agent-1"), 30, "the taint")
        taint = self.taint_patches("agent-1")[0]
        r = self.stop_run(self.p, self.errp)
        self.assertGreaterEqual(taint.time - last, SAFE - EPS, "tainted less than S after a renewal" + self.ctx(r))

    def test_fencing_seen_taints_after_the_floor_not_s(self):
        # S 30 s; the agent wrote `fencing`: tainted once that stood the floor (1 s), read again after it
        self.fence_server(cluster(uk("agent-1", since=120)),
                          [agent_lease("agent-1", safe=30, **{FENCING: micro() + " kubelet"})])
        self.run_fenced()
        self.wait(lambda: self.taint_patches("agent-1"), 20, "the taint")
        first = self.lease_reqs("agent-1", "GET")[0]
        taint = self.taint_patches("agent-1")[0]
        r = self.stop_run(self.p, self.errp)
        self.assertGreaterEqual(taint.time - first.time, 1 - EPS, self.ctx(r))
        self.assertLess(taint.time - first.time, 20, self.ctx(r))

    def test_must_fail_require_without_an_agent_never_tainted(self):
        self.fence_server(cluster(uk("agent-1", since=120)))
        r = self.once(taint_after=60, extra=FENCE + ["--fence", "require"])
        self.assertRc(r, 0)
        self.assertEqual(self.taint_patches("agent-1"), [], self.ctx(r))
        self.assertTrue(self.lease_reqs("agent-1", "GET"), self.ctx(r))
        self.assertLog(r, "Not tainting agent-1: no fence agent, and --fence=require")

    def test_prefer_without_an_agent_tainted_as_before(self):
        self.fence_server(cluster(uk("agent-1", since=120)))
        r = self.once(taint_after=60, extra=FENCE)
        self.assertRc(r, 0)
        self.assertTainted("agent-1", r)
        self.assertEqual([q.status for q in self.lease_reqs("agent-1", "GET")], [404], self.ctx(r))
        self.assertLog(r, "fence prefer (Leases in namespace fence from --fence-namespace")

    def test_prefer_forbidden_leases_tainted_with_one_line_a_pass(self):
        self.fence_server(cluster(uk("agent-1", since=120), uk("agent-2", since=120)),
                          review_deny=[("get", "leases")])
        r = self.once(taint_after=60, extra=FENCE)
        self.assertRc(r, 0)
        self.assertTainted("agent-1", r)
        self.assertTainted("agent-2", r)
        self.assertLog(r, "may not get leases.coordination.k8s.io in namespace fence")
        self.assertEqual(r.count("counts as without a fence agent (logged once a pass)"), 1, self.ctx(r))

    def test_must_fail_more_than_half_unknown_no_request(self):
        # the storm guard is off (100%): the fence's own majority rule holds them
        nodes = [ready("self"), ready("agent-9")] + [uk("agent-%d" % i, since=120) for i in range(3)]
        self.fence_server(nodes, [agent_lease("agent-%d" % i) for i in range(3)])
        r = self.once(taint_after=60, extra=FENCE + ["--max-unknown", "100%"])
        self.assertEqual([q for q in self.srv.reqs("PATCH")], [], self.ctx(r))
        self.assertLog(r, "No fence requested, none waited on tainted: 3 of 5 nodes Unknown, over half")

    def test_must_fail_unreadable_safe_time_waits(self):
        lease = agent_lease("agent-1")
        lease["metadata"]["annotations"]["noderecover.io/fence-safe-seconds"] = "soon"
        self.fence_server(cluster(uk("agent-1", since=120)), [lease])
        r = self.once(taint_after=60, extra=FENCE)
        self.assertEqual(self.srv.reqs("PATCH"), [], self.ctx(r))
        self.assertLog(r, "Not tainting agent-1 yet: its fence Lease cannot be read (noderecover.io/fence-safe-seconds")

    def test_ready_again_before_the_taint_removes_the_request(self):
        self.fence_server(cluster(uk("agent-1", since=120)), [agent_lease("agent-1", safe=60)])
        self.run_fenced()
        self.wait(lambda: REQUEST in self.annotations("agent-1"), 20, "the request")
        self.srv.touch("agent-1", come_back)
        self.wait(lambda: REQUEST not in self.annotations("agent-1"), 20, "the request removed")
        r = self.stop_run(self.p, self.errp)
        rm = [q for q in self.lease_reqs("agent-1", "PATCH") if q.json()[-1]["op"] == "remove"]
        self.assertEqual(rm[0].json()[0]["op"], "test", self.ctx(r))
        self.assertEqual(self.taint_patches("agent-1"), [], self.ctx(r))

    def test_outside_a_pod_prefer_without_a_namespace_is_off(self):
        self.fence_server(cluster(uk("agent-1", since=120)), [agent_lease("agent-1")])
        r = self.once(taint_after=60)
        self.assertRc(r, 0)
        self.assertTainted("agent-1", r)
        self.assertEqual(self.lease_reqs("agent-1"), [], self.ctx(r))
        self.assertLog(r, "fence off (no --fence-namespace outside a pod)")
        r = self.once(taint_after=60, extra=["--fence", "require"])
        self.assertRc(r, 2)
        self.assertLog(r, "--fence=require needs --fence-namespace")

    def test_must_fail_plan_says_taint_not_delete_under_the_fence(self):
        """A removable node past --prune-after whose agent is armed: under the fence the watcher
        taints it first, through the fence wait, and deletes it only once tainted; plan must say
        that, not the deletion a plan deciding without the fence announced."""
        self.fence_server(cluster(uk("agent-1", since=120, labels={fixtures.DEFAULT_PRUNE_LABEL: "true"})),
                          [agent_lease("agent-1")])
        r = self.once(argv=self.args("plan", taint_after=60, prune_after=90, extra=FENCE + ["--fence", "require"]))
        self.assertRc(r, 0)
        row = [ln for ln in r.stdout.splitlines() if ln.startswith("agent-1 ")][0]
        self.assertNotIn("delete", row, r.stdout)
        self.assertIn("taint", row, r.stdout)
        self.assertEqual(self.srv.reqs("DELETE"), [], self.ctx(r))

    def test_plan_fence_column(self):
        self.fence_server(cluster(uk("agent-1", since=120), uk("agent-2", since=120), uk("agent-3", since=120),
                                  uk("agent-4", since=120)),
                          [agent_lease("agent-1"), agent_lease("agent-2", **{REQUEST: micro()}),
                           agent_lease("agent-3", **{FENCING: micro() + " kubelet"})])
        r = self.once(argv=self.args("plan", taint_after=60, extra=FENCE))
        self.assertRc(r, 0)
        lines = r.stdout.splitlines()
        self.assertRegex(lines[0], r"ROLES\s+FENCE\s+ACTION$")
        want = {"agent-1": "armed", "agent-2": "requested", "agent-3": "fencing", "agent-4": "no agent",
                "self": "no agent"}
        for ln in lines[1:-1]:
            name = ln.split()[0]
            if name in want:
                self.assertIn("  %s  " % want[name], ln, r.stdout)
        self.assertIn("once its fence is safe", [ln for ln in lines if ln.startswith("agent-1 ")][0])
        self.assertEqual(len([q for q in self.srv.reqs() if "/leases" in q.path]), 1, "one list" + self.ctx(r))
        r = self.once(argv=self.args("plan", taint_after=60, extra=FENCE + ["--output", "json"]))
        import json
        got = {n["name"]: n["fence"] for n in json.loads(r.stdout)["nodes"]}
        self.assertEqual({k: got[k] for k in want}, want, r.stdout)


if __name__ == "__main__":
    unittest.main()
