"""Leader election: two replicas, one Lease, only its holder lists and acts.

Each replica has its own token, so every request the stand-in records says who sent it.
The take-over test is a must-fail test for the check before every write: the leader is
stopped (SIGSTOP) while the answer to its list is on its way, so when it is resumed it holds
facts about a node that needs a taint, and only that check keeps it from writing after the
other replica took over.
"""
import os
import signal
import subprocess
import time

import fixtures
from apiserver import SSAR_PATH, Fault
from harness import Case, Run, ready, uk

NS = "noderecover"
LEASE = "noderecover"
TOK = {"a": "replica-a-token-0123456789abcdef", "b": "replica-b-token-0123456789abcdef"}


class Lease(Case):
    def cluster(self):
        return fixtures.etcd_servers(3) + [uk("agent-1", since=400), ready("agent-2")]

    def replica(self, who, poll=1, extra=()):
        """Starts `run` as replica WHO (its own token and POD_NAME); returns (Popen, errpath)."""
        tok = os.path.join(self.tmp, "token-" + who)
        with open(tok, "w") as f:
            f.write(TOK[who] + "\n")
        argv = self.args("run", extra=["--poll", str(poll), "--leader-elect", "--lease-namespace", NS] + list(extra))
        argv[argv.index("--token-file") + 1] = tok
        errp = os.path.join(self.tmp, "replica-%s.err" % who)
        ef = open(errp, "wb")
        self.addCleanup(ef.close)
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=ef, stderr=ef,
                             env=self.env({"POD_NAME": "replica-" + who}))

        def _end():
            if p.poll() is None:
                p.send_signal(signal.SIGCONT)
                p.kill()
                p.wait(timeout=10)
        self.addCleanup(_end)
        return p, errp

    def log(self, errp):
        with open(errp, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def by(self, who, since=0.0):
        """The requests replica WHO sent, from monotonic time since on."""
        return [r for r in self.srv.reqs() if r.header("Authorization") == "Bearer " + TOK[who] and r.time >= since]

    def holder(self):
        le = self.srv.lease(NS, LEASE)
        return ((le or {}).get("spec") or {}).get("holderIdentity") or ""

    def wait_holder(self, prefix, timeout):
        return self.srv.wait_for(lambda: self.holder().startswith(prefix), timeout)

    def ctx2(self, *errps):
        return self.ctx(Run([], None, "", "\n".join(self.log(e) for e in errps), 0))

    def test_one_acts_and_the_other_takes_over_a_stopped_leader(self):
        self.server(self.cluster(), tokens=TOK.values())
        a, ea = self.replica("a")
        self.assertTrue(self.wait_holder("replica-a-", 10), "replica a never took the lease" + self.ctx2(ea))
        b, eb = self.replica("b")
        self.assertTrue(self.srv.wait_for(lambda: self.oos_taints("agent-1"), 10), "agent-1 never tainted" + self.ctx2(ea, eb))
        self.assertTrue(self.srv.wait_for(lambda: "Following" in self.log(eb), 10), self.ctx2(ea, eb))
        time.sleep(3)
        # only the leader lists and acts; the follower only reads the Lease
        self.assertTrue([r for r in self.by("a") if r.path.startswith("/api/v1/nodes")])
        nodes_b = [r for r in self.by("b") if not r.path.startswith("/apis/coordination.k8s.io/")]
        self.assertEqual(nodes_b, [], "the follower talked about nodes" + self.ctx2(ea, eb))
        self.assertEqual([r.method for r in self.by("b") if r.method != "GET"], [],
                         "the follower wrote the lease while it was held" + self.ctx2(ea, eb))
        le = self.srv.lease(NS, LEASE)["spec"]
        self.assertEqual(le["leaseDurationSeconds"], 15)
        self.assertRegex(le["renewTime"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")

        # The leader's next list answer carries a node that needs a taint, and it is stopped
        # while that answer is on its way.
        self.srv.on(Fault("delay", seconds=2), times=1,
                    pred=lambda r: r.is_list and r.header("Authorization") == "Bearer " + TOK["a"])
        self.srv.add_node(uk("agent-3", since=400))
        self.assertTrue(self.srv.wait_for(lambda: [r for r in self.by("a") if r.is_list and r.status is None], 10),
                        "replica a never listed again" + self.ctx2(ea, eb))
        a.send_signal(signal.SIGSTOP)
        t_stop = time.monotonic()
        self.assertTrue(self.wait_holder("replica-b-", 30), "replica b never took over" + self.ctx2(ea, eb))
        took = time.monotonic() - t_stop
        takes = [r for r in self.by("b") if r.method == "PUT" and r.status == 200]
        t_take = takes[0].time
        print("take-over %.1fs after SIGSTOP of the leader" % (t_take - t_stop))
        self.assertGreaterEqual(t_take - t_stop, 14.0, "taken over before the lease could lapse" + self.ctx2(ea, eb))
        self.assertLessEqual(took, 25.0, self.ctx2(ea, eb))
        le = self.srv.lease(NS, LEASE)["spec"]
        self.assertEqual(le["leaseTransitions"], 1, le)
        # the new leader acts
        self.assertTrue(self.srv.wait_for(lambda: self.oos_taints("agent-3"), 10), "agent-3 never tainted" + self.ctx2(ea, eb))
        self.assertTrue([r for r in self.by("b") if r.method == "PATCH" and r.node_name == "agent-3"])

        # must-fail: resumed, the old leader holds facts saying agent-3 needs a taint; it must
        # not write (no PATCH, no DELETE, no lease write) after the take-over
        a.send_signal(signal.SIGCONT)
        self.assertTrue(self.srv.wait_for(lambda: "this replica no longer holds the lease" in self.log(ea) or
                                          "Stopped leading" in self.log(ea), 15), self.ctx2(ea, eb))
        time.sleep(4)
        late = [r for r in self.by("a", since=t_take) if r.method not in ("GET", "HEAD")]
        self.assertEqual(late, [], "the old leader wrote after the take-over" + self.ctx2(ea, eb))
        self.assertTrue(self.holder().startswith("replica-b-"))
        self.assertIn("Following", self.log(ea).split("Stopped leading")[-1] if "Stopped leading" in self.log(ea) else self.log(ea))

    def test_sigterm_releases_the_lease(self):
        self.server(self.cluster(), tokens=TOK.values())
        a, ea = self.replica("a")
        self.assertTrue(self.wait_holder("replica-a-", 10), self.ctx2(ea))
        before = self.srv.lease(NS, LEASE)["spec"]
        a.send_signal(signal.SIGTERM)
        self.assertEqual(a.wait(timeout=10), 0, self.ctx2(ea))
        self.assertIn("Released lease %s/%s" % (NS, LEASE), self.log(ea))
        last = [r for r in self.by("a") if r.method == "PUT"][-1]
        spec = last.json()["spec"]
        # as client-go's ReleaseOnCancel: nobody, 1 s, both times now, transitions kept
        self.assertEqual(spec["holderIdentity"], "", spec)
        self.assertEqual(spec["leaseDurationSeconds"], 1, spec)
        self.assertEqual(spec["acquireTime"], spec["renewTime"])
        self.assertRegex(spec["renewTime"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
        self.assertEqual(spec["leaseTransitions"], before["leaseTransitions"])
        self.assertEqual(last.status, 200)
        # a released lease is taken at once, not after 15 s
        t0 = time.monotonic()
        b, eb = self.replica("b")
        self.assertTrue(self.wait_holder("replica-b-", 5), self.ctx2(eb))
        print("released lease taken %.1fs after the new replica started" % (time.monotonic() - t0))

    def test_lost_race_does_not_act(self):
        """The take-over PUT is refused with 409 (another wrote first): no list, no write."""
        self.server(self.cluster(), tokens=TOK.values())
        # a lease held by a replica that stopped renewing long ago, written by someone else
        # between our read and our write every time
        self.srv.leases[(NS, LEASE)] = {"kind": "Lease", "apiVersion": "coordination.k8s.io/v1",
                                        "metadata": {"name": LEASE, "namespace": NS, "uid": "u", "resourceVersion": "5"},
                                        "spec": {"holderIdentity": "gone-0", "leaseDurationSeconds": 15}}

        def bump(srv, req):
            if req.method == "PUT" and req.path.endswith("/leases/" + LEASE):
                with srv.lock:
                    srv.rv += 1
                    srv.leases[(NS, LEASE)]["metadata"]["resourceVersion"] = str(srv.rv)
        self.srv.before(bump)
        a, ea = self.replica("a")
        time.sleep(20)
        puts = [r for r in self.by("a") if r.method == "PUT"]
        self.assertTrue(puts and all(r.status == 409 for r in puts), self.ctx2(ea))
        self.assertEqual([r for r in self.by("a") if r.path.startswith("/api/v1/nodes")], [], self.ctx2(ea))
        self.assertIn("between our read and our write (409)", self.log(ea))

    def test_a_slow_read_does_not_date_a_fresh_record_back(self):
        """Must-fail: the Lease's first read is held 20 s, and its holder renews meanwhile (at
        10 s), then stops. A record counts from when its answer arrived: a replica that dated it
        from the start of its try saw it 20 s old at once, and took the Lease 2 s later from a
        holder whose term had 13 s to run (the 60-minute soak caught this: a stalled path)."""
        self.server(self.cluster(), tokens=TOK.values())

        def record(rv):
            renew = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
            return {"kind": "Lease", "apiVersion": "coordination.k8s.io/v1",
                    "metadata": {"name": LEASE, "namespace": NS, "uid": "u", "resourceVersion": str(rv)},
                    "spec": {"holderIdentity": "other-0", "leaseDurationSeconds": 15,
                             "acquireTime": renew, "renewTime": renew}}
        with self.srv.lock:
            self.srv.leases[(NS, LEASE)] = record(5)
        self.srv.on(Fault("delay", seconds=20), times=1, method="GET",
                    path_prefix="/apis/coordination.k8s.io/v1/namespaces/%s/leases" % NS)
        t0 = time.monotonic()
        a, ea = self.replica("a")
        time.sleep(10)
        with self.srv.lock:
            self.srv.rv += 1
            self.srv.leases[(NS, LEASE)] = record(self.srv.rv)
        # the held read arrives at about 20 s: no take-over before it has stood 15 s from then
        took = self.wait_holder("replica-a", 45)
        at = time.monotonic() - t0
        self.assertTrue(took, self.ctx2(ea))
        self.assertGreaterEqual(at, 33, "took the Lease %.1fs after starting, %.1fs after the holder's last renewal"
                                % (at, at - 10) + self.ctx2(ea))

    def test_no_lease_namespace_outside_a_pod(self):
        self.server(self.cluster())
        r = self.once(extra=["--leader-elect"])
        self.assertRc(r, 2)
        self.assertLog(r, "--lease-namespace")
        self.assertEqual(self.srv.reqs(), [], "a request was sent" + self.ctx(r))
        r = self.once(env={"NODE_RECOVERY_LEADER_ELECT": "true"})
        self.assertRc(r, 2)

    def test_metrics_say_who_leads_and_a_standby_is_ready(self):
        # noderecover_leader is 1 on the holder only; a standby lists nothing and is still
        # ready and alive (a Deployment's rollout waits on readiness)
        import test_listen
        self.server(self.cluster(), tokens=TOK.values())
        ports = {w: test_listen.free_port() for w in "ab"}
        a = self.replica("a", extra=["--listen", "127.0.0.1:%d" % ports["a"]])
        self.assertTrue(self.wait_holder("replica-a", 10), self.ctx2(a[1]))
        b = self.replica("b", extra=["--listen", "127.0.0.1:%d" % ports["b"]])

        def leader(w):
            try:
                st, _, body, _ = test_listen.get(ports[w], "/metrics", timeout=2)
            except OSError:
                return None
            m = test_listen.parse_exposition(body.decode())
            return m[("noderecover_leader", "")]
        self.assertTrue(self.srv.wait_for(lambda: leader("b") == 0 and leader("a") == 1, 10), self.ctx2(a[1], b[1]))
        for w in "ab":
            self.assertEqual(test_listen.get(ports[w], "/readyz")[0], 200, w + self.ctx2(a[1], b[1]))
            self.assertEqual(test_listen.get(ports[w], "/livez")[0], 200, w + self.ctx2(a[1], b[1]))


def asked(srv):
    """The verbs the access reviews asked about, in order."""
    return [q.json()["spec"]["resourceAttributes"]["verb"] for q in srv.reqs(reviews=True) if q.path == SSAR_PATH]


class LeaseAccess(Case):
    """The permission check asks for what leader election needs, in the Lease's namespace
    (here, not in test_access: the stand-in model knows no leader election)."""

    def cluster(self):
        return fixtures.etcd_servers(3) + [ready("self"), uk("agent-1", since=120)]

    def test_must_fail_denied_lease_update_with_leader_election_exits_2(self):
        self.server(self.cluster(), review_deny=[("update", "leases")])
        r = self.once(taint_after=60, extra=["--leader-elect", "--lease-namespace", "ops"])
        self.assertRc(r, 2)
        line = [ln for ln in r.lines if "Permission check" in ln]
        self.assertEqual(len(line), 1, self.ctx(r))
        self.assertIn("may not update leases.coordination.k8s.io in namespace ops", line[0])
        self.assertEqual(asked(self.srv), ["list", "patch", "get", "create", "update"], self.ctx(r))
        self.assertEqual(self.oos_taints("agent-1"), [])
        # the review asked in the lease's namespace, not cluster-wide
        ra = [q.json()["spec"]["resourceAttributes"] for q in self.srv.reqs(reviews=True) if q.path == SSAR_PATH][-1]
        self.assertEqual((ra["group"], ra["resource"], ra.get("namespace")), ("coordination.k8s.io", "leases", "ops"))

    def test_no_lease_review_without_leader_election(self):
        self.server(self.cluster(), review_deny=[("update", "leases")])
        r = self.once(taint_after=60)
        self.assertRc(r, 0)
        self.assertEqual(asked(self.srv), ["list", "patch", "create"], self.ctx(r))
