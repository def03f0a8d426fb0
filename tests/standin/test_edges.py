"""Edges the rows do not name: hostile names and values, a large cluster, defaults, commands."""
import socket
import time
import signal
import unittest

import fixtures
from apiserver import Fault
from harness import BINARY, Case, healthy, ready, uk

LABEL = fixtures.DEFAULT_PRUNE_LABEL
YES = {LABEL: "true"}


def servers():
    return fixtures.etcd_servers(3) + [uk("self", since=7200)]


class Edges(Case):
    def test_node_name_unfit_for_a_path_is_not_acted_on(self):
        # a hostile or broken server: names that are no DNS subdomain must not reach a request path
        bad = ["evil/../../api/v1/namespaces", "a b", "x?y=1", "UPPER%2f"]
        self.server(servers() + [uk(n, since=400) for n in bad] + [uk("agent-1", since=400)]
                    + healthy(4))
        r = self.once(taint_after=60)
        self.assertRc(r, (0, 1))
        self.assertTainted("agent-1", r)
        odd = [q.target for q in self.srv.mutating() if q.node_name != "agent-1"]
        self.assertEqual(odd, [], "requests for names unfit for a path" + self.ctx(r))

    def test_values_written_into_json_are_escaped(self):
        uid = 'f00d"\\\u00e9\n-uid'
        self.server(servers() + [uk("agent-1", since=400, labels=YES, uid=uid)])
        r = self.once(taint_after=60, prune_after=300)
        for q in self.srv.mutating():
            q.json()  # every body sent is well-formed JSON
        if self.srv.node("agent-1") is None:
            self.assertRc(r, 0)
            self.assertDeleted("agent-1", r)  # preconditions carry the uid exactly
        else:
            # refusing to act on a node whose facts it cannot represent is also safe
            self.assertRc(r, 1)
            self.assertEqual(self.srv.mutating(), [], self.ctx(r))
            self.assertTrue(any("agent-1" in ln for ln in r.lines[1:]), "the refusal names the node" + self.ctx(r))

    def test_explicit_empty_taints_and_annotations(self):
        self.server(servers() + [uk("agent-1", since=120)])
        self.srv.touch("agent-1", lambda n: (n["spec"].__setitem__("taints", []),
                                             n["metadata"].__setitem__("annotations", {})))
        self.listed["agent-1"] = self.srv.node("agent-1")
        r = self.once(taint_after=60)
        self.assertRc(r, 0)
        self.assertTainted("agent-1", r)

    def test_large_cluster_default_page_size(self):
        nodes = servers() + [ready("agent-%04d" % i) for i in range(1100)]
        nodes += [uk("agent-0500x", since=120), uk("zz-agent", since=120)]
        self.server(nodes)
        r = self.once(taint_after=60, timeout=120)
        self.assertRc(r, 0)
        self.assertEqual(len(self.srv.reqs(list_only=True)), 3, self.ctx(r))
        self.assertTainted("agent-0500x", r)
        self.assertTainted("zz-agent", r)
        self.assertEqual(len(self.srv.mutating()), 2)

    def test_self_node_defaults_to_host_name(self):
        host = socket.gethostname()
        self.server(servers() + [uk(host, since=400), uk("agent-1", since=400)])
        r = self.once(taint_after=60, self_node=None)
        self.assertRc(r, 0)
        self.assertTainted("agent-1", r)
        if host != "self":
            self.assertUntouched(host, r)

    def test_version_and_help_send_nothing(self):
        self.server(servers())
        for cmd in ("version", "help"):
            r = self.once(argv=[BINARY, cmd])
            self.assertRc(r, 0)
            self.assertTrue((r.stdout + r.stderr).strip(), "%s prints something" % cmd)
        self.assertEqual(self.srv.connections, 0)

    def test_bad_page_size_and_poll_refused(self):
        self.server(servers())
        for extra in (["--page-size", "0"], ["--page-size", "many"], ["--poll", "0"], ["--poll", "1.5"]):
            r = self.once(extra=extra, timeout=20)
            self.assertRc(r, 2)
            self.assertEqual(len(r.lines), 1, self.ctx(r))
            self.assertIn(extra[0].lstrip("-").split("-")[0], r.lines[0].lower())
        self.assertEqual(self.srv.connections, 0)

    def test_sigterm_abandons_the_request_in_flight(self):
        # A pod gets SIGKILL 30 s after SIGTERM: the request in flight is abandoned within a
        # second, and a change already sent is not sent again.
        self.server(servers() + [ready("agent-1")])
        p, err = self.start_run(extra=["--poll", "1"])
        ok = self.srv.wait_for(lambda: len(self.srv.reqs(list_only=True)) >= 1, 10)
        self.assertTrue(ok)
        self.srv.on(Fault("delay", seconds=5), times=1, method="PATCH")
        self.srv.touch("agent-1", lambda n: [c.update(status="Unknown", lastTransitionTime=fixtures.rfc3339(300))
                                             for c in n["status"]["conditions"] if c["type"] == "Ready"])
        ok = self.srv.wait_for(lambda: self.srv.reqs("PATCH"), 5)
        self.assertTrue(ok, "no PATCH sent")
        time.sleep(0.3)
        t0 = time.monotonic()
        r = self.stop_run(p, err, signal.SIGTERM)
        self.assertLess(time.monotonic() - t0, 1.5, self.ctx(r))
        self.assertEqual(r.rc, 0, self.ctx(r))
        self.assertEqual(len(self.srv.reqs("PATCH")), 1, self.ctx(r))
        self.assertNoLog(r, "Tainted agent-1 ")
        self.assertLog(r, "stopping on a signal")


if __name__ == "__main__":
    unittest.main()
