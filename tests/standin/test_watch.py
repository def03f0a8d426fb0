"""`run` follows the nodes with a watch (issue 15): it acts at the threshold whatever --poll is,
clears at once, resumes from the last resourceVersion, relists exactly when it must, never on
a stream that broke, and never hammers the server. Each test here fails on a build that only
polls (--poll 3600: one list and nothing more) and on one that mishandles its case.

Settings go by environment variables (NODE_RECOVERY_WATCH, NODE_RECOVERY_RELIST_SECONDS), so a
build without them fails on behaviour, not on an unknown flag. NODERECOVER_TEST_DEADLINE_SCALE
shortens the program's fixed timers (the 120 s silence limit, the backoff) where a test needs it.
These tests never run against the Python model (refwatcher.py polls): see README.md.
They never reach anything but the stand-in on 127.0.0.1.
"""
import json
import time
import unittest

import fixtures
from apiserver import Fault, Reply, status_body
from harness import ANN, MODEL, Case, healthy, our_taint, ready, uk
from test_run import come_back, go_unknown

POLL = ["--poll", "3600"]   # a polling build lists once and then sleeps through every test
# A new taint is decided on a list read for it, never on the table (pass.h): each taint that
# an event makes due costs one list more, and the watch restarts from that list's version.
TAINT_LIST = 1


def cluster(*extra, n_healthy=4):
    """3 Ready etcd servers, self Ready, n_healthy Ready agents, and extra."""
    return fixtures.etcd_servers(3) + [ready("self")] + healthy(n_healthy) + list(extra)


def scaled(n=20):
    return {"NODERECOVER_TEST_DEADLINE_SCALE": str(n)}


class WatchCase(Case):
    WATCH = True

    def run_watching(self, nodes, extra=(), env=None, taint_after=60, **kw):
        """Start `run` against a stand-in holding nodes; wait for its first watch."""
        if self.srv is None:
            self.server(nodes, **kw)
        self.p, self.errp = self.start_run(taint_after=taint_after, extra=POLL + list(extra), env=env)
        ok = self.srv.wait_for(lambda: self.srv.watches(), 15)
        if not ok:
            r = self.stop()
            self.fail("no watch request within 15 s of the start%s" % self.ctx(r))
        return self.srv.watches()[0]

    def stop(self):
        return self.stop_run(self.p, self.errp)

    def wait(self, cond, timeout, what):
        """Wait for cond; on a timeout stop the binary and fail with its log and the requests."""
        if not self.srv.wait_for(cond, timeout):
            r = self.stop()
            self.fail("%s: not within %ss%s" % (what, timeout, self.ctx(r)))

    def list_rv(self, req):
        return json.loads(req.reply.body)["metadata"]["resourceVersion"]

    def watch_after(self, req):
        """The first watch request after req (a list), or None."""
        return next((w for w in self.srv.watches() if w.time > req.time), None)

    def patched(self, name):
        return [q for q in self.srv.reqs("PATCH", node=name)]

    def settle(self, seconds):
        time.sleep(seconds)


class Decide(WatchCase):
    def test_unknown_by_an_event_tainted_at_its_threshold_with_poll_3600(self):
        w = self.run_watching(cluster(ready("agent-1")), taint_after=5)
        self.assertEqual(w.rv, self.list_rv(self.srv.lists()[0]), "the first watch starts at the list's resourceVersion")
        q = w.qdict()
        self.assertEqual(q.get("allowWatchBookmarks"), "true")
        self.assertTrue(300 <= int(q.get("timeoutSeconds", "0")) <= 600, "timeoutSeconds %r" % q.get("timeoutSeconds"))
        self.settle(1)
        t0 = time.monotonic()
        self.srv.touch("agent-1", go_unknown(0))   # the node lifecycle controller's one MODIFIED
        want_rv = self.srv.node("agent-1")["metadata"]["resourceVersion"]
        self.wait(lambda: self.oos_taints("agent-1"), 30, "agent-1 tainted")
        took = time.monotonic() - t0
        self.settle(1)   # the PATCH is answered and logged
        r = self.stop()
        # lastTransitionTime and Date have whole seconds: the threshold is 4-5 s after t0
        self.assertGreaterEqual(took, 3.5, "tainted %.1f s after it went Unknown, threshold 5 s%s" % (took, self.ctx(r)))
        self.assertLessEqual(took, 20.0, "tainted %.1f s after it went Unknown, threshold 5 s (a poll would be 3600 s)%s" % (took, self.ctx(r)))
        self.assertEqual(len(self.oos_taints("agent-1")), 1, self.ctx(r))
        p = self.patched("agent-1")
        self.assertEqual(len(p), 1, self.ctx(r))
        self.assertEqual(p[0].json()[0], {"op": "test", "path": "/metadata/resourceVersion", "value": want_rv},
                         "the write is guarded by the event's resourceVersion" + self.ctx(r))
        self.assertLog(r, "Tainted agent-1 ")
        self.assertEqual(len(self.srv.lists()), 1 + TAINT_LIST, "no list per poll while watching" + self.ctx(r))

    def test_ready_event_clears_at_once(self):
        n = uk("agent-1", since=600, taints=[our_taint()], annotations={ANN: fixtures.rfc3339(500)})
        self.run_watching(cluster(n), taint_after=60)
        self.settle(1)
        self.assertEqual(self.patched("agent-1"), [])
        t0 = time.monotonic()
        self.srv.touch("agent-1", come_back)
        self.wait(lambda: not self.oos_taints("agent-1"), 30, "agent-1 cleared")
        took = time.monotonic() - t0
        r = self.stop()
        self.assertLess(took, 20, "cleared %.1f s after its Ready event (a poll would be 3600 s)%s" % (took, self.ctx(r)))
        self.assertNotIn(ANN, self.srv.node("agent-1")["metadata"].get("annotations", {}))
        self.assertEqual(len(self.srv.lists()), 1, self.ctx(r))

    def test_node_never_listed_is_taken_in(self):
        self.run_watching(cluster(), taint_after=60)
        self.srv.add_node(uk("newcomer", since=300))
        self.wait(lambda: self.oos_taints("newcomer"), 5, "newcomer (ADDED after the list) tainted")
        r = self.stop()
        self.assertEqual(len(self.patched("newcomer")), 1, self.ctx(r))
        self.assertEqual(len(self.srv.lists()), 1 + TAINT_LIST, self.ctx(r))

    def test_deleted_node_leaves_the_table(self):
        # both turn Unknown by events; gone is deleted before its threshold, and must never be
        # patched (a table that kept it would, and get a 404); kept proves the binary acts
        self.run_watching(cluster(ready("gone"), ready("kept")), taint_after=5)
        self.srv.touch("gone", go_unknown(0))
        self.srv.touch("kept", go_unknown(0))
        self.srv.delete_node("gone")
        self.wait(lambda: self.oos_taints("kept"), 12, "kept tainted at its threshold")
        self.settle(2)
        r = self.stop()
        self.assertEqual(self.srv.reqs(node="gone"), [], "the deleted node was acted on" + self.ctx(r))

    def test_storm_of_events_holds_every_taint(self):
        # 20 nodes; 12 turn Unknown by events in a burst (60%, over the 50% guard): nothing is
        # tainted at their threshold; when 2 come back (10 of 20, the limit), the 10 are
        # tainted (each event is decided as it comes: one come-back leaves 11, still held)
        nodes = cluster(n_healthy=16)
        self.assertEqual(len(nodes), 20)
        self.run_watching(nodes, taint_after=4, extra=["--storm-cooldown", "0"])
        storm = ["healthy-%d" % i for i in range(12)]
        for name in storm:
            self.srv.touch(name, go_unknown(0))
        self.settle(4 + 4)
        held = self.srv.mutating()
        for name in storm[10:]:
            self.srv.touch(name, come_back)
        self.wait(lambda: all(self.oos_taints(n) for n in storm[:10]), 8, "the 10 left tainted once the storm passed")
        self.settle(1)
        r = self.stop()
        self.assertEqual(held, [], "tainted during a storm of 12 Unknown of 20" + self.ctx(r))
        self.assertLog(r, "Storm guard engaged")
        self.assertEqual(sorted(q.node_name for q in self.srv.mutating()), sorted(storm[:10]), self.ctx(r))

    def test_must_fail_storm_missed_by_a_lagging_table_holds_the_due_taint(self):
        # dying turns Unknown by an event; then the stream goes silent (open, nothing sent: a
        # held connection) while 11 more of 20 turn Unknown on the server, unseen by the table.
        # At dying's threshold the table counts 1 Unknown of 20: a build that taints from it
        # taints in the middle of a storm of 12 (the chaos soak's seed 266959444). A new taint
        # is decided on a list, which counts the storm and holds it.
        nodes = cluster(ready("dying"), n_healthy=15)
        self.assertEqual(len(nodes), 20)
        self.run_watching(nodes, taint_after=5)
        self.srv.touch("dying", go_unknown(0))
        self.srv.silence_watches()   # after dying's event in the stream's order: that one is sent
        for i in range(11):
            self.srv.touch("healthy-%d" % i, go_unknown(0))
        # dying's threshold (5 s) passes: a list, or (the build that decides on its table) a taint
        self.wait(lambda: len(self.srv.lists()) >= 2 or self.srv.mutating(), 30, "a list or a write at dying's threshold")
        self.settle(2)   # the list's pass decides, says and would write
        r = self.stop()
        self.assertEqual(self.srv.mutating(), [], "tainted on a table that missed a storm of 12 Unknown of 20" + self.ctx(r))
        self.assertLog(r, "Storm guard engaged: 12 of 20 nodes are Unknown")
        self.assertGreaterEqual(len(self.srv.lists()), 2, "the due taint was decided on a list" + self.ctx(r))

    def test_must_fail_a_failing_taint_waits_for_the_poll_not_every_event(self):
        # agent-1's taint is refused every time (422 with an admission policy's words), while
        # events keep coming (busy's label, every 0.3 s). A round after each burst that tried
        # again would send a list and a PATCH each time; it waits for the poll's round, as a
        # failed action waits for the next pass when polling (--poll 3600: not in this test)
        self.server(cluster(uk("agent-1", since=300), ready("busy")))
        self.srv.on(Reply(422, status_body(422, "Invalid", "denied by policy noderecover-test")), times=None,
                    method="PATCH", node="agent-1")
        self.run_watching(None, taint_after=60)
        self.wait(lambda: self.patched("agent-1"), 10, "agent-1's taint tried")
        for i in range(20):
            self.srv.touch("busy", lambda n, i=i: n["metadata"]["labels"].update({"x": str(i)}))
            time.sleep(0.3)
        r = self.stop()
        self.assertEqual(len(self.patched("agent-1")), 1, "the failed taint tried again at every burst of events" + self.ctx(r))
        self.assertEqual(len(self.srv.lists()), 1, self.ctx(r))
        self.assertEqual(r.count("Tainting agent-1 failed"), 1, self.ctx(r))

    def test_bytes_split_one_at_a_time(self):
        # one byte per chunk and per TLS record: chunk-size lines and UTF-8 sequences split
        n = ready("agent-1")   # without its image list: 6 KiB, some 40,000 TLS records of one byte
        del n["status"]["images"]
        self.server(cluster(n))
        self.srv.watch_chunk = 1
        self.srv.watch_split = 1
        self.run_watching(None, taint_after=60)
        self.srv.touch("agent-1", go_unknown(300))
        self.wait(lambda: self.oos_taints("agent-1"), 30, "agent-1 tainted from a one-byte-at-a-time event")
        self.srv.touch("agent-1", come_back)
        self.wait(lambda: not self.oos_taints("agent-1"), 30, "agent-1 cleared from a one-byte-at-a-time event")
        r = self.stop()
        self.assertEqual(len(self.srv.lists()), 1 + TAINT_LIST, "no relist: the stream was read whole" + self.ctx(r))

    def test_random_boundaries_and_events_sharing_a_chunk(self):
        self.server(cluster(ready("agent-1"), ready("agent-2")))
        self.srv.watch_chunk = "random"
        self.srv.watch_split = "random"
        self.run_watching(None, taint_after=60)
        self.srv.watch_chunk = "coalesce"   # the streams to come: several events per chunk
        for name in ("agent-1", "agent-2"):
            self.srv.touch(name, go_unknown(300))
        self.wait(lambda: self.oos_taints("agent-1") and self.oos_taints("agent-2"), 10, "both tainted")
        r = self.stop()
        # both due at once: one round, one list for the two taints (two if the events came apart)
        self.assertIn(len(self.srv.lists()), (1 + TAINT_LIST, 1 + 2 * TAINT_LIST), self.ctx(r))


class Resume(WatchCase):
    def test_normal_end_resumes_from_the_last_event_without_a_list(self):
        w1 = self.run_watching(cluster(ready("agent-1")))
        self.srv.touch("agent-1", lambda n: n["metadata"]["labels"].update({"x": "1"}))
        last = self.srv.node("agent-1")["metadata"]["resourceVersion"]
        self.wait(lambda: w1.events_sent >= 1, 5, "the event sent")
        self.settle(0.5)
        self.srv.end_watches()
        self.wait(lambda: len(self.srv.watches()) >= 2, 5, "a new watch after the stream ended")
        self.settle(1)
        r = self.stop()
        w2 = self.srv.watches()[1]
        self.assertEqual(w2.rv, last, "resumed from the last event's resourceVersion" + self.ctx(r))
        self.assertEqual(len(self.srv.lists()), 1, "a normal end is no reason to list" + self.ctx(r))

    def test_resumes_from_a_bookmarks_resource_version(self):
        self.server(cluster())
        self.srv.bookmark_every = 0.5
        self.run_watching(None)
        with self.srv.lock:
            self.srv.rv += 7    # other resources changed: only a bookmark says so
        want = str(self.srv.rv)
        self.wait(lambda: self.srv.watches()[0].sent.get("BOOKMARK", 0) >= 2, 5, "bookmarks sent")
        self.srv.end_watches()
        self.wait(lambda: len(self.srv.watches()) >= 2, 5, "a new watch after the stream ended")
        r = self.stop()
        self.assertEqual(self.srv.watches()[1].rv, want, "resumed from the bookmark's resourceVersion" + self.ctx(r))
        self.assertEqual(len(self.srv.lists()), 1, self.ctx(r))

    def test_stream_ended_at_its_timeout_resumes(self):
        self.server(cluster(ready("agent-1")))
        self.srv.watch_max_seconds = 2
        self.run_watching(None)
        self.wait(lambda: len(self.srv.watches()) >= 3, 10, "watches renewed as each stream ends")
        self.srv.touch("agent-1", go_unknown(300))
        self.wait(lambda: self.oos_taints("agent-1"), 6, "agent-1 tainted on a renewed stream")
        r = self.stop()
        self.assertEqual(len(self.srv.lists()), 1 + TAINT_LIST, self.ctx(r))

    def test_410_in_the_stream_leads_to_exactly_one_relist(self):
        self.run_watching(cluster(ready("agent-1")))
        self.srv.on(Fault("watch", error=410), watch=True)   # the next watch: too old, as a cacher says
        self.srv.end_watches()
        self.wait(lambda: len(self.srv.lists()) >= 2, 15, "a relist after the 410")
        self.wait(lambda: len(self.srv.watches()) >= 3, 15, "a watch after the relist")
        self.settle(3)
        self.srv.touch("agent-1", go_unknown(300))
        self.wait(lambda: self.oos_taints("agent-1"), 5, "agent-1 tainted after the relist")
        self.wait(lambda: len(self.srv.watches()) >= 3 + TAINT_LIST, 15, "a watch after the taint's list")
        self.settle(1)
        r = self.stop()
        lists, watches = self.srv.lists(), self.srv.watches()
        self.assertEqual(len(lists), 2 + TAINT_LIST, "exactly one relist" + self.ctx(r))
        self.assertEqual(watches[1].sent.get("ERROR"), 1)
        self.assertEqual(watches[2].rv, self.list_rv(lists[1]), "watching from the relist's resourceVersion" + self.ctx(r))
        self.assertEqual(len(watches), 3 + TAINT_LIST, "a watch restarted with no reason (the stream was neither ended "
                         "nor silent nor broken)" + self.ctx(r))

    def test_410_error_on_an_open_stream_and_410_before_the_stream(self):
        self.run_watching(cluster())
        self.srv.watch_error(410)
        self.wait(lambda: len(self.srv.lists()) >= 2, 15, "a relist after a 410 ERROR event")
        self.wait(lambda: len(self.srv.watches()) >= 2, 15, "a watch after the relist")
        self.srv.on(Reply(410, status_body(410, "Expired", "too old resource version: 1 (2)")), watch=True)
        self.srv.end_watches()
        self.wait(lambda: len(self.srv.lists()) >= 3, 15, "a relist after a 410 answer")
        self.settle(3)
        r = self.stop()
        self.assertEqual(len(self.srv.lists()), 3, "one relist per 410" + self.ctx(r))
        self.assertEqual(len(self.srv.watches()), 4, self.ctx(r))

    def test_compacted_resource_version_relists_once(self):
        # the stream ends; by then the last RV is compacted: the resume gets 410, then one relist
        self.run_watching(cluster(ready("agent-1")))
        self.srv.silence_watches()
        self.srv.touch("agent-1", lambda n: n["metadata"]["labels"].update({"x": "1"}))
        self.srv.compact()
        self.srv.cut_watches()
        self.wait(lambda: len(self.srv.lists()) >= 2, 10, "a relist after the compaction")
        self.settle(3)
        still_open = self.srv.open_watches()
        r = self.stop()
        self.assertEqual(len(self.srv.lists()), 2, self.ctx(r))
        w = self.srv.watches()
        self.assertEqual(w[-1].rv, self.list_rv(self.srv.lists()[1]), self.ctx(r))
        self.assertEqual(still_open, 1, "the watch after the relist stays open" + self.ctx(r))

    def test_silent_stream_dropped_after_120s_scaled_and_resumed(self):
        # scale 20: 120 s is 6 s. No bookmarks: silence is silence.
        self.server(cluster(ready("agent-1")))
        self.srv.bookmark_every = None
        self.run_watching(None, env=scaled(20))
        self.srv.touch("agent-1", lambda n: n["metadata"]["labels"].update({"x": "1"}))
        last = self.srv.node("agent-1")["metadata"]["resourceVersion"]
        self.srv.silence_watches()
        t0 = time.monotonic()
        self.wait(lambda: len(self.srv.watches()) >= 2, 15, "a new watch after 6 s of silence")
        took = time.monotonic() - t0
        r = self.stop()
        self.assertGreaterEqual(took, 4.5, "dropped after %.1f s of silence, the limit is 6 s%s" % (took, self.ctx(r)))
        self.assertLessEqual(took, 10, "dropped after %.1f s of silence, the limit is 6 s%s" % (took, self.ctx(r)))
        self.assertEqual(self.srv.watches()[1].rv, last, "resumed from the last resourceVersion" + self.ctx(r))
        self.assertEqual(len(self.srv.lists()), 1, "silence is no reason to list" + self.ctx(r))

    def test_bookmarks_keep_a_quiet_stream(self):
        # scale 40 (3 s limit), a bookmark every 0.5 s and no event for 7 s: the stream is kept
        self.server(cluster())
        self.srv.bookmark_every = 0.5
        self.run_watching(None, env=scaled(40))
        self.settle(7)
        r = self.stop()
        self.assertEqual(len(self.srv.watches()), 1, "a stream with bookmarks is not silent" + self.ctx(r))
        self.assertGreaterEqual(self.srv.watches()[0].sent.get("BOOKMARK", 0), 10)

    def test_429_waits_its_retry_after(self):
        self.run_watching(cluster(ready("agent-1")))
        self.srv.on(Reply(429, status_body(429, "TooManyRequests", "Too many requests, please try again later."),
                          headers=[("Retry-After", "4")]), watch=True)
        self.srv.end_watches()
        self.wait(lambda: len(self.srv.watches()) >= 2 and self.srv.watches()[1].status == 429, 5, "the 429")
        t429 = self.srv.watches()[1].time
        self.wait(lambda: len(self.srv.watches()) >= 3, 12, "a watch after the Retry-After")
        r = self.stop()
        w = self.srv.watches()
        gap = w[2].time - t429
        self.assertGreaterEqual(gap, 3.5, "watched again %.1f s after a 429 with Retry-After: 4%s" % (gap, self.ctx(r)))
        self.assertLessEqual(gap, 9, "watched again %.1f s after a 429 with Retry-After: 4%s" % (gap, self.ctx(r)))
        self.assertEqual(w[2].rv, w[1].rv, self.ctx(r))
        self.assertEqual(len(self.srv.lists()), 1, self.ctx(r))

    def backs_off(self, fail_next):
        """fail_next(times) makes the next watch fail. kube.c must take it as a failure, not as
        an end, an expiry or a broken stream: the binary says so once, does not list, and watches
        again from the list's resourceVersion after a backoff (0.8 to 1.6 s the first time).
        How the backoff grows over many failures is the core's, and is tested there:
        tests/unit/test_core.c and the simulator's spacing rule (tests/sim) each fail on a core
        without the backoff or without its doubling. These tests used to count the watches in
        10 s of failures (at most 8)."""
        w1 = self.run_watching(cluster())
        fail_next(1)
        self.srv.end_watches()
        self.wait(lambda: len(self.srv.watches()) >= 3, 10, "a watch again after the failed one")
        self.settle(0.5)
        r = self.stop()
        w = self.srv.watches()
        gap = w[2].time - w[1].time
        self.assertGreaterEqual(gap, 0.7, "watched again %.2f s after a failed watch: no backoff%s" % (gap, self.ctx(r)))
        self.assertEqual(len(self.srv.lists()), 1, "a failure that skipped nothing is no reason to list" + self.ctx(r))
        self.assertEqual({x.rv for x in w}, {w1.rv}, self.ctx(r))
        self.assertEqual(r.count("Watching nodes failed"), 1, "the failure said once" + self.ctx(r))

    def test_500_before_the_stream_backs_off(self):
        self.backs_off(lambda n: self.srv.on(Reply(500, status_body(500, "InternalError", "etcdserver: no leader")),
                                             times=n, watch=True))

    def test_error_event_500_backs_off(self):
        self.backs_off(lambda n: self.srv.on(Fault("watch", error=500), times=n, watch=True))

    def test_must_fail_error_event_echoing_the_token_is_one_clean_line(self):
        # An ERROR event whose Status echoes the token (a proxy quoting the request) across lines:
        # its line says the server ended the watch, the token redacted, nothing forged.
        self.run_watching(cluster())
        self.srv.watch_error(code=500, reason="Internal\nError",
                             message="echo %s\n2026-01-01T00:00:00Z Tainted forged" % self.TOKEN)
        self.wait(lambda: len(self.srv.watches()) >= 2, 15, "a watch again after the ERROR event")
        r = self.stop()
        self.assertLog(r, "the server ended the watch: Internal?Error: echo [redacted]?2026-01-01T00:00:00Z Tainted forged")
        self.assertFalse(any(self.TOKEN[9:25] in ln for ln in r.lines), "the token in the log" + self.ctx(r))
        self.assertFalse(any(ln.startswith("2026-01-01T00:00:00Z") for ln in r.lines), "a forged line" + self.ctx(r))

    def test_stream_cut_mid_event_backs_off(self):
        self.backs_off(lambda n: self.srv.on(Fault("watch", cut_after=0), times=n, watch=True))

    def test_relist_period_from_the_environment(self):
        # --relist 3: each period drawn from [2.4, 3] s after the list before (the only test of
        # that range: neither tests/unit nor the simulator fails on a period drawn from [0.6, 3])
        self.run_watching(cluster(), env={"NODE_RECOVERY_RELIST_SECONDS": "3"})
        self.settle(10)
        r = self.stop()
        lists = self.srv.lists()
        gaps = [b.time - a.time for a, b in zip(lists, lists[1:])]
        self.assertGreaterEqual(len(lists), 3, "lists %s in 10 s at --relist 3%s" % (len(lists), self.ctx(r)))
        self.assertLessEqual(len(lists), 5, "lists %s in 10 s at --relist 3%s" % (len(lists), self.ctx(r)))
        for g in gaps:
            self.assertGreaterEqual(g, 2.1, "relisted after %.1f s%s" % (g, self.ctx(r)))
            self.assertLessEqual(g, 8.0, "relisted after %.1f s (the default would be 600 s)%s" % (g, self.ctx(r)))
        # each relist is followed by a watch from its resourceVersion
        rvs = {w.rv for w in self.srv.watches()}
        for lst in lists:
            self.assertIn(self.list_rv(lst), rvs, self.ctx(r))


class Broken(WatchCase):
    """A stream that might have skipped an event: one log line, drop it, relist; nothing done
    on the strength of that event. A control node going Unknown afterwards is tainted.
    The bad event is sent on the stream only: the server's agent-1 stays Ready, so the relist
    rightly finds nothing to do, and the event names agent-1's real resourceVersion, so a
    build that acted on it would get its PATCH through."""

    def fake_unknown(self, name="agent-1"):
        n = self.srv.node(name)
        go_unknown(300)(n)
        return dict(kind="Node", apiVersion="v1", **n)

    def after_a_broken_stream(self, breaker, suspect):
        self.run_watching(cluster(ready("agent-1"), ready("control")))
        breaker()
        self.wait(lambda: len(self.srv.lists()) >= 2, 15, "a relist after the broken stream")
        self.wait(lambda: len(self.srv.watches()) >= 2, 15, "a watch after the relist")
        self.settle(3)
        self.srv.touch("control", go_unknown(300))
        self.wait(lambda: self.oos_taints("control"), 5, "the control node tainted after the relist")
        r = self.stop()
        self.assertEqual([q for q in self.srv.reqs(node=suspect) if q.method != "GET"], [],
                         "acted on %s from a broken stream%s" % (suspect, self.ctx(r)))
        self.assertEqual(len(self.srv.lists()), 2 + TAINT_LIST, "exactly one relist" + self.ctx(r))
        self.assertEqual(self.watch_after(self.srv.lists()[1]).rv, self.list_rv(self.srv.lists()[1]),
                         "the watch after the relist starts at its resourceVersion" + self.ctx(r))
        self.assertTrue(any("relist" in ln.lower() for ln in r.lines), "a line says why it relists" + self.ctx(r))
        return r

    def test_broken_event(self):
        def broken():
            ev = json.dumps({"type": "MODIFIED", "object": self.fake_unknown()}, separators=(",", ":"))
            self.srv.watch_send(ev[:-2].encode() + b",,}}\n")   # the last object ends ",,}}"
        self.after_a_broken_stream(broken, "agent-1")

    def test_object_that_is_not_a_node(self):
        def pod():
            n = uk("agent-9", since=300)
            n.update(kind="Pod", apiVersion="v1")
            n["metadata"]["resourceVersion"] = str(self.srv.rv + 1)
            self.srv.watch_send({"type": "ADDED", "object": n})
        self.after_a_broken_stream(pod, "agent-9")

    def test_unknown_event_type(self):
        self.after_a_broken_stream(lambda: self.srv.watch_send({"type": "EXPLODED", "object": self.fake_unknown()}),
                                   "agent-1")


class Modes(WatchCase):
    def test_once_and_plan_send_no_watch(self):
        self.server(cluster(uk("agent-1", since=300)))
        r = self.once(taint_after=60)
        self.assertRc(r, 0)
        r2 = self.once(taint_after=60, argv=self.args("plan", taint_after=60))
        self.assertIn(r2.rc, (0, 1), self.ctx(r2))
        self.assertEqual(self.srv.watches(), [], "once or plan watched" + self.ctx(r2))
        self.assertEqual(len(self.srv.lists()), 2, self.ctx(r2))

    def test_watch_false_polls(self):
        self.server(cluster(ready("agent-1")))
        p, errp = self.start_run(extra=["--poll", "1"], env={"NODE_RECOVERY_WATCH": "false"})
        ok = self.srv.wait_for(lambda: len(self.srv.lists()) >= 4, 25)
        r = self.stop_run(p, errp)
        self.assertTrue(ok, self.ctx(r))
        self.assertEqual(self.srv.watches(), [], "NODE_RECOVERY_WATCH=false watched" + self.ctx(r))


def vm(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for ln in f:
            k, _, v = ln.partition(":")
            if k in ("VmRSS", "VmHWM"):
                out[k] = int(v.split()[0])
    return out


@unittest.skipIf(MODEL, "the binary's own memory bound; the Python model has none")
class Memory(WatchCase):
    def test_flat_while_100000_events_stream_by(self):
        # a node without its image list (3 KiB an event), its annotation changing each time;
        # after 2000 events warm every buffer, 100,000 more must not grow the peak by 256 KiB
        n = ready("busy")
        del n["status"]["images"]
        w = self.run_watching(cluster(n))
        pid = self.p.pid
        self.srv.flood("busy", 2000)
        self.wait(lambda: w.events_sent >= 2000, 20, "2000 events taken")
        first = vm(pid)
        t0 = time.monotonic()
        sent = self.srv.flood("busy", 100000)
        self.wait(lambda: w.events_sent >= 102000, 30, "100,000 events taken")
        secs = time.monotonic() - t0
        last = vm(pid)
        r = self.stop()
        import sys
        print("\n  100,000 events in %.1f s; VmHWM %d -> %d KiB, VmRSS %d -> %d KiB" % (
            secs, first["VmHWM"], last["VmHWM"], first["VmRSS"], last["VmRSS"]), file=sys.stderr)
        self.assertEqual(sent, 100000)
        self.assertEqual(len(self.srv.watches()), 1, "the stream held" + self.ctx(r))
        self.assertEqual(len(self.srv.lists()), 1, self.ctx(r))
        self.assertLess(last["VmHWM"] - first["VmHWM"], 256, "peak grew %d KiB%s" % (
            last["VmHWM"] - first["VmHWM"], self.ctx(r)))
        self.assertLess(last["VmRSS"] - first["VmRSS"], 256)
        self.assertEqual(self.srv.mutating(), [], self.ctx(r))


@unittest.skipIf(MODEL, "the Python model has no --listen")
class Metrics(WatchCase):
    def test_events_by_type_and_relists_by_reason(self):
        from test_listen import free_port, get, parse_exposition
        port = free_port()
        self.server(cluster(ready("agent-1"), ready("agent-2")))
        self.srv.bookmark_every = 0.5
        self.run_watching(None, extra=["--listen", "127.0.0.1:%d" % port])
        self.srv.touch("agent-1", lambda n: n["metadata"]["labels"].update({"x": "1"}))
        self.srv.touch("agent-1", lambda n: n["metadata"]["labels"].update({"x": "2"}))
        self.srv.add_node(ready("agent-3"))
        self.srv.delete_node("agent-2")
        self.wait(lambda: sum(w.sent.get("BOOKMARK", 0) for w in self.srv.watches()) >= 1 and
                  sum(w.events_sent for w in self.srv.watches()) >= 5, 5, "events and a bookmark sent")
        self.srv.watch_error(410)
        self.wait(lambda: len(self.srv.lists()) >= 2 and len(self.srv.watches()) >= 2, 5, "relisted after the 410")
        self.srv.watch_send(b'{"object":{"kind":"Node",]},"type":"MODIFIED"}\n')   # broken before its type
        self.wait(lambda: len(self.srv.lists()) >= 3 and len(self.srv.watches()) >= 3, 5, "relisted after the broken event")
        self.srv.end_watches()
        self.wait(lambda: len(self.srv.watches()) >= 4, 5, "a restart after a normal end")
        self.settle(1)
        st, _, body, _ = get(port, "/metrics")
        r = self.stop()
        self.assertEqual(st, 200, self.ctx(r))
        m = parse_exposition(body.decode("utf-8"))
        ev = lambda t: m.get(("noderecover_watch_events_total", '{type="%s"}' % t))  # noqa: E731
        rl = lambda t: m.get(("noderecover_relists_total", '{reason="%s"}' % t))  # noqa: E731
        sent = {}
        for w in self.srv.watches():
            for k, v in w.sent.items():
                sent[k] = sent.get(k, 0) + v
        self.assertEqual(ev("modified"), 2, body.decode() + self.ctx(r))
        self.assertEqual(ev("added"), 1, body.decode())
        self.assertEqual(ev("deleted"), 1, body.decode())
        self.assertEqual(ev("error"), 1, body.decode())
        self.assertGreaterEqual(ev("bookmark"), 1, body.decode())
        self.assertLessEqual(ev("bookmark"), sent.get("BOOKMARK", 0), body.decode())
        self.assertEqual((rl("start"), rl("expired"), rl("broken"), rl("periodic"), rl("failed")), (1, 1, 1, 0, 0),
                         body.decode())
        self.assertGreaterEqual(m.get(("noderecover_watch_restarts_total", ""), 0), 1, body.decode())
        self.assertIn(("noderecover_watch_last_event_age_seconds", ""), m, body.decode())


if __name__ == "__main__":
    unittest.main()
