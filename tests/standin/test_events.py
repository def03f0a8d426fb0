"""Events on the Node: an events.k8s.io/v1 Event after each taint, clear, delete, refusal, storm
guard change and opted-out node (the stand-in validates each as kube-apiserver does), none when
--events=false or in either dry run, at most one per node and reason in ten minutes, and an
events endpoint that refuses (403) or stalls never changes a pass: the action stands, the exit
status is the same, one log line, one request."""
import re
import time
import unittest

import fixtures
from apiserver import Fault
from harness import Case, healthy, our_taint, ready, uk
from test_run import come_back, go_unknown

CONTROLLER = "github-runner.exadev.io/noderecover"
LABEL = fixtures.DEFAULT_PRUNE_LABEL
NO = "github-runner.exadev.io/no-recovery"
MICRO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
FAILED = "Posting Event"
SCALE = {"NODERECOVER_TEST_DEADLINE_SCALE": "10"}


def cluster(*extra):
    return fixtures.etcd_servers(3) + [ready("self")] + list(extra) + healthy(4)


class Events(Case):
    def events(self, reason=None):
        return [e for e in self.srv.posted if reason is None or e["reason"] == reason]

    def assertEvent(self, run, node, reason, type_, action, note):
        got = [e for e in self.events(reason) if e["regarding"]["name"] == node]
        self.assertEqual(len(got), 1, "one %s Event about %s%s" % (reason, node, self.ctx(run)))
        e = got[0]
        n = self.srv.node(node) or self.listed[node]
        self.assertEqual(e["regarding"], {"kind": "Node", "apiVersion": "v1", "name": node,
                                          "uid": n["metadata"]["uid"]})
        self.assertEqual((e["type"], e["action"], e["reportingController"]), (type_, action, CONTROLLER))
        self.assertEqual(e["metadata"]["namespace"], "default")
        self.assertTrue(e["metadata"]["name"].startswith(node + "."), e["metadata"]["name"])
        self.assertRegex(e["eventTime"], MICRO)
        self.assertTrue(0 < len(e["reportingInstance"]) <= 128)
        self.assertIn(note, e["note"])
        # the note is the log line's words
        self.assertTrue(any(e["note"] in ln for ln in run.lines), "note %r not a log line%s" % (e["note"], self.ctx(run)))
        return e

    def test_an_event_per_taint(self):
        self.server(cluster(uk("agent-1", since=400), uk("agent-2", since=400)))
        t0 = time.time()
        r = self.once(taint_after=60)
        self.assertRc(r, 0)
        for name in ("agent-1", "agent-2"):
            self.assertTainted(name, r)
            e = self.assertEvent(r, name, "OutOfServiceTainted", "Warning", "Taint",
                                 "Tainted %s node.kubernetes.io/out-of-service=nodeshutdown:NoExecute" % name)
            stamp = time.mktime(time.strptime(e["eventTime"][:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone
            self.assertLess(abs(stamp - t0), 30, "eventTime from the local clock")
        # each Event after its action
        order = [(q.method, q.node_name or (q.json()["regarding"]["name"] if q.is_event else None))
                 for q in self.srv.reqs() if q.method != "GET"]
        for name in ("agent-1", "agent-2"):
            self.assertLess(order.index(("PATCH", name)), order.index(("POST", name)), self.ctx(r))
        self.assertEqual(len(self.srv.event_posts()), 2)

    def test_clear_delete_and_refusals(self):
        cp = fixtures.node("cp-9", ready="Unknown", since=400, server=True, etcd=False, labels={LABEL: "true"})
        back = fixtures.node("back-1", taints=[our_taint()], annotations={fixtures.DEFAULT_ANNOTATION: "x"})
        self.server(cluster(cp, back, uk("agent-1", since=400, labels={LABEL: "true"})))
        r = self.once(taint_after=60, prune_after=300)
        self.assertRc(r, 1)  # the refusal fails the pass, Events or not
        self.assertEvent(r, "back-1", "OutOfServiceCleared", "Normal", "Clear", "Cleared back-1")
        self.assertEvent(r, "agent-1", "NodeDeleted", "Normal", "Delete", "Deleted agent-1")
        self.assertEvent(r, "cp-9", "DeleteRefused", "Warning", "Delete", "Not deleting cp-9: it is a control-plane node")
        self.assertEvent(r, "cp-9", "OutOfServiceTainted", "Warning", "Taint", "Tainted cp-9")

    def test_excluded_node(self):
        self.server(cluster(uk("keep", since=400, labels={NO: "true"})))
        r = self.once(taint_after=60)
        self.assertRc(r, 0)
        self.assertEvent(r, "keep", "NodeExcluded", "Warning", "Skip", "Not tainting keep: it carries %s=true" % NO)

    def test_storm_guard_regards_our_own_node(self):
        nodes = fixtures.etcd_servers(3) + [ready("self")] + [uk("agent-%d" % i, since=400) for i in range(6)]
        self.server(nodes)
        r = self.once(taint_after=60)
        self.assertRc(r, 1)
        e = self.events("StormGuardEngaged")
        self.assertEqual(len(e), 1, self.ctx(r))
        self.assertEqual(e[0]["regarding"], {"kind": "Node", "apiVersion": "v1", "name": "self", "uid": "self"})
        self.assertEqual((e[0]["type"], e[0]["action"]), ("Warning", "Hold"))
        self.assertIn("Storm guard engaged: 6 of 10 nodes are Unknown", e[0]["note"])
        self.assertEqual(self.events("OutOfServiceTainted"), [], "no taint, no taint Event")

    def test_must_fail_a_repeat_is_not_a_new_event_every_pass(self):
        # a refused delete said again in other words (the quorum's count fell from 2 to 1):
        # two lines, one Event in ten minutes
        agent = uk("agent-1", since=400, labels={LABEL: "true"}, taints=[our_taint()],
                   annotations={fixtures.DEFAULT_ANNOTATION: "x"})
        self.server(fixtures.etcd_servers(2) + [ready("self")] + healthy(4) + [agent])
        p, errp = self.start_run(taint_after=60, prune_after=300, extra=["--poll", "1"])
        lists = lambda: len(self.srv.reqs(list_only=True))  # noqa: E731
        self.srv.wait_for(lambda: lists() >= 3, 30)
        self.srv.touch("server-1", go_unknown(0))
        n = lists()
        self.srv.wait_for(lambda: lists() >= n + 3, 30)
        r = self.stop_run(p, errp)
        self.assertEqual(r.count("Not deleting agent-1"), 2, self.ctx(r))
        self.assertEqual(len(self.events("DeleteRefused")), 1, self.ctx(r))

    def test_must_fail_forbidden_events_change_nothing_and_are_said_once(self):
        self.server(cluster(uk("agent-1", since=400), uk("agent-2", since=400), uk("agent-3", since=400)),
                    event_verbs=())
        r = self.once(taint_after=60)
        self.assertRc(r, 0)  # the pass is as good as without Events
        for name in ("agent-1", "agent-2", "agent-3"):
            self.assertTainted(name, r)
        self.assertEqual(r.count(FAILED), 1, self.ctx(r))
        self.assertLog(r, "HTTP 403")
        self.assertLog(r, "the action stands")
        self.assertEqual(len(self.srv.event_posts()), 1, "a refused post pauses the rest" + self.ctx(r))

    def test_must_fail_events_denied_at_start_exit_2_unless_turned_off(self):
        # The permission check asks for create on events in default (only when they are on
        # and not a dry run): denied, the start ends with exit 2 naming the verb and the file.
        self.server(cluster(uk("agent-1", since=400)), review_deny=[("create", "events")])
        r = self.once(taint_after=60)
        self.assertRc(r, 2)
        self.assertLog(r, "may not create events.events.k8s.io in namespace default")
        self.assertEqual(self.oos_taints("agent-1"), [])
        r = self.once(taint_after=60, extra=["--events=false"])
        self.assertRc(r, 0)
        self.assertTainted("agent-1", r)
        self.assertEqual(self.srv.event_posts(), [])

    def test_forbidden_events_said_once_over_several_passes(self):
        self.server(cluster(uk("agent-1", since=400)), event_verbs=())
        p, errp = self.start_run(taint_after=60, extra=["--poll", "1"])
        self.srv.wait_for(lambda: self.srv.node("agent-1")["spec"].get("taints"), 20)
        # more to do on each later pass: agent-1 back (a clear), then agent-2 Unknown (a taint)
        self.srv.touch("agent-1", come_back)
        self.srv.add_node(uk("agent-2", since=400))
        self.srv.wait_for(lambda: (self.srv.node("agent-2")["spec"].get("taints")
                                   and not self.srv.node("agent-1")["spec"].get("taints")), 20)
        time.sleep(1.5)
        r = self.stop_run(p, errp)
        self.assertLog(r, "Cleared agent-1")
        self.assertLog(r, "Tainted agent-2")
        self.assertEqual(r.count(FAILED), 1, self.ctx(r))
        self.assertEqual(len(self.srv.event_posts()), 1, self.ctx(r))

    def test_must_fail_stalled_events_endpoint_costs_one_request(self):
        self.server(cluster(*[uk("agent-%d" % i, since=400) for i in range(3)]))
        self.srv.on(Fault("slow_headers", seconds=60), times=None, path_prefix="/apis/events.k8s.io/")
        r = self.once(taint_after=60, env=SCALE)
        self.assertRc(r, 0)
        for i in range(3):
            self.assertTainted("agent-%d" % i, r)
        self.assertEqual(len(self.srv.event_posts()), 1, self.ctx(r))
        self.assertEqual(r.count(FAILED), 1, self.ctx(r))
        # one response deadline (3 s when scaled), not one per action
        self.assertLess(r.seconds, 10, self.ctx(r))

    def test_must_fail_an_event_never_waits_out_a_retry_after(self):
        # kube's retries would wait 6 s twice; an Event has 5 s in all, so it gives up at once
        self.server(cluster(*[uk("agent-%d" % i, since=400) for i in range(3)]))
        self.srv.on(Fault("status", status=503, reason="ServiceUnavailable", message="busy",
                          headers=[("Retry-After", "6")]), times=None, path_prefix="/apis/events.k8s.io/")
        r = self.once(taint_after=60)
        self.assertRc(r, 0)
        for i in range(3):
            self.assertTainted("agent-%d" % i, r)
        self.assertEqual(len(self.srv.event_posts()), 1, self.ctx(r))
        self.assertEqual(r.count(FAILED), 1, self.ctx(r))
        self.assertLess(r.seconds, 5, self.ctx(r))

    def test_events_false_posts_none(self):
        for how in ({"extra": ["--events=false"]}, {"env": {"NODE_RECOVERY_EVENTS": "false"}}):
            with self.subTest(how=how):
                self.server(cluster(uk("agent-1", since=400)))
                r = self.once(taint_after=60, **how)
                self.assertRc(r, 0)
                self.assertTainted("agent-1", r)
                self.assertEqual(self.srv.event_posts(), [], self.ctx(r))

    def test_must_fail_dry_runs_post_none(self):
        for flag in ("--dry-run", "--dry-run=server"):
            with self.subTest(flag=flag):
                # an action, an opted-out node and a refusal: each would be an Event outside a dry run
                cp = fixtures.node("cp-9", ready="Unknown", since=400, server=True, etcd=False,
                                   labels={LABEL: "true"})
                self.server(cluster(uk("agent-1", since=400), uk("keep", since=400, labels={NO: "true"}), cp))
                r = self.once(taint_after=60, prune_after=300, extra=[flag])
                self.assertRc(r, 1)
                self.assertLog(r, "Would taint agent-1")
                self.assertLog(r, "Not tainting keep")
                self.assertLog(r, "Not deleting cp-9")
                self.assertEqual(self.srv.event_posts(), [], self.ctx(r))


if __name__ == "__main__":
    unittest.main()
