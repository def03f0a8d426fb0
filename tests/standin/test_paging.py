"""Paged listing: limit and continue only, 410 restarts once, keep-alive, no action on half a list."""
import json
import unittest

import fixtures
from apiserver import Fault, Reply
from harness import Case, ready, uk


def many(n_ready=10, stale=("agent-10",)):
    nodes = fixtures.etcd_servers(3) + [uk("self", since=7200)]
    nodes += [ready("agent-%02d" % i) for i in range(n_ready)]
    nodes += [uk(s, since=120) for s in stale]
    return nodes


class Paging(Case):
    def lists(self):
        return self.srv.reqs(list_only=True)

    def test_every_page_fetched_with_only_limit_and_continue(self):
        self.server(many())  # 15 nodes
        r = self.once(page_size=4)
        self.assertRc(r, 0)
        ls = self.lists()
        self.assertEqual(len(ls), 4, self.ctx(r))
        self.assertEqual(ls[0].query, [("limit", "4")], "first page: limit only")
        for q in ls[1:]:
            self.assertEqual(sorted(k for k, _ in q.query), ["continue", "limit"], "follow-up: %s" % q.target)
            self.assertEqual(q.qdict()["limit"], "4")
        # each continue is the token the previous page returned
        for prev, nxt in zip(ls, ls[1:]):
            tok = json.loads(prev.reply.body)["metadata"]["continue"]
            self.assertEqual(nxt.qdict()["continue"], tok, "continue is the token the previous page gave")
        self.assertTainted("agent-10", r)
        self.assertNotIn(400, [q.status for q in ls], self.ctx(r))

    def test_default_page_size_is_500(self):
        self.server(many(n_ready=3))
        r = self.once()
        self.assertRc(r, 0)
        self.assertEqual(self.lists()[0].query, [("limit", "500")], self.ctx(r))

    def test_stale_nodes_on_every_page_all_tainted(self):
        self.server(many(n_ready=6, stale=("agent-00x", "agent-03x", "agent-06x", "zz-last")))
        r = self.once(page_size=3)
        self.assertRc(r, 0)
        for n in ("agent-00x", "agent-03x", "agent-06x", "zz-last"):
            self.assertTainted(n, r)

    def test_expired_continue_restarts_from_first_page_once(self):
        self.server(many())
        self.srv.expire_continue = 1
        r = self.once(page_size=4)
        self.assertRc(r, 0)
        ls = self.lists()
        st = [q.status for q in ls]
        self.assertEqual(st.count(410), 1, self.ctx(r))
        i = st.index(410)
        self.assertEqual(ls[i + 1].query, [("limit", "4")], "after 410 the list starts again" + self.ctx(r))
        self.assertEqual(len(ls), i + 1 + 4, "then the whole list" + self.ctx(r))
        self.assertTainted("agent-10", r)

    def test_expired_twice_fails_the_pass_without_action(self):
        self.server(many())
        self.srv.expire_continue = 100
        r = self.once(page_size=4)
        self.assertRc(r, 1)
        self.assertNoActions(r)
        self.assertEqual([q.status for q in self.lists()].count(410), 2, "restart once, not forever" + self.ctx(r))
        self.assertLog(r, "failed")

    def test_fault_on_a_later_page_means_no_action_on_earlier_pages(self):
        self.server([uk("a-stale", since=600)] + many(n_ready=8, stale=()))
        self.srv.on(Fault("garbage_json"), times=None, list_only=True, follow_up=True)
        r = self.once(page_size=3)
        self.assertRc(r, 1)
        self.assertNoActions(r)
        self.assertLog(r, "failed")

    def test_a_continue_token_handed_back_unchanged_fails_the_pass(self):
        # A broken or hostile server that answers every follow-up page with the token it was
        # sent would otherwise keep the pass listing forever.
        self.server(many())

        def same_token_again(req):
            return Reply(200, {"kind": "NodeList", "apiVersion": "v1",
                               "metadata": {"continue": req.qdict()["continue"]}, "items": []})
        self.srv.on(same_token_again, times=None, list_only=True, follow_up=True)
        r = self.once(page_size=4)
        self.assertRc(r, 1)
        self.assertLessEqual(len(self.lists()), 3, self.ctx(r))
        self.assertIn("same continue token", r.stderr, self.ctx(r))
        self.assertNoActions(r)

    def test_keep_alive_reused_across_pages_and_actions(self):
        self.server(many(stale=("agent-10", "agent-11")))
        r = self.once(page_size=3)
        self.assertRc(r, 0)
        n = len(self.srv.reqs())
        self.assertGreaterEqual(n, 7)
        self.assertLessEqual(self.srv.connections, 2, "%d connections for %d requests%s" % (
            self.srv.connections, n, self.ctx(r)))

    def test_server_closing_each_connection(self):
        self.server(many(stale=("agent-10", "agent-11")), close_each=True)
        r = self.once(page_size=3)
        self.assertRc(r, 0)
        self.assertTainted("agent-10", r)
        self.assertTainted("agent-11", r)


if __name__ == "__main__":
    unittest.main()
