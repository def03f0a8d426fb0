"""Smaller wire edges: the documented token size, and a resourceVersion not valid UTF-8."""
import unittest

from harness import Case, ready, uk
import fixtures


def cluster():
    return fixtures.etcd_servers(3) + [uk("self", since=7200), uk("agent-1", since=400), ready("agent-2")]


class WireEdges(Case):
    def test_token_of_8191_characters_and_a_newline_is_read(self):
        # 8 KiB is the documented limit: a file of 8192 bytes, the token and its newline
        tok = ("t0K" * 3000)[:8191]
        self.server(cluster(), token=tok)
        self.write_token(tok)
        r = self.once(taint_after=60)
        self.assertRc(r, 0)
        self.assertTainted("agent-1", r)
        self.assertNotIn(tok[:40], r.stderr)

    def test_token_past_8_kib_is_refused(self):
        tok = ("t0K" * 3000)[:8193]
        self.server(cluster(), token=tok)
        self.write_token(tok)
        r = self.once(taint_after=60)
        self.assertRc(r, 2)
        self.assertLog(r, "token file")
        self.assertEqual(self.srv.reqs(), [])
        self.assertNotIn(tok[:40], r.stderr)

    def test_resource_version_not_utf8_named_as_such(self):
        self.server(cluster())
        rv = self.listed["agent-1"]["metadata"]["resourceVersion"]
        self.srv.list_filter = lambda b: b.replace(b'"resourceVersion":"%s"' % rv.encode(),
                                                   b'"resourceVersion":"%s\xff"' % rv.encode())
        r = self.once(taint_after=60)
        self.assertRc(r, 1)
        self.assertUntouched("agent-1", r)
        self.assertNoLog(r, "too long")
        # json.c's strict reader refuses the list, so no patch is ever built from it
        self.assertLog(r, "invalid UTF-8 in a string")


if __name__ == "__main__":
    unittest.main()
