"""--log-format json (NODE_RECOVERY_LOG_FORMAT=json): every line one JSON object carrying what
the text line carries (time, level, message; node, action and reason on a line about a node),
whatever bytes a server put in a message; text stays the default.
"""
import json
import re

import fixtures
from apiserver import Reply, status_body
from harness import STAMP, TAINT_LOG, Case, uk


class JsonLogs(Case):
    def setUp(self):
        super().setUp()
        self.server(fixtures.etcd_servers(3) + [uk("agent-1", since=100000), uk("agent-2", since=100000)])

    def objects(self, run):
        out = []
        for ln in run.lines:
            try:
                o = json.loads(ln)
            except ValueError:
                self.fail("a line is not JSON: %r%s" % (ln, self.ctx(run)))
            self.assertIsInstance(o, dict, ln)
            self.assertRegex(o.get("time", ""), r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", ln)
            self.assertIn(o.get("level"), ("info", "warning", "error"), ln)
            self.assertIsInstance(o.get("message"), str, ln)
            out.append(o)
        return out

    def test_same_words_as_text(self):
        # must-fail: the old build refused --log-format as an unknown option
        text = self.once()
        self.assertRc(text, 0)
        self.assertLogShape(text)
        # the second run has its own server (another port) a second later: numbers aside
        words = [re.sub(r"\d+", "N", STAMP.sub("", ln)) for ln in text.lines]
        self.setUp_again()
        r = self.once(extra=["--log-format", "json"])
        self.assertRc(r, 0)
        objs = self.objects(r)
        self.assertEqual([re.sub(r"\d+", "N", o["message"]) for o in objs], words, "the JSON messages against the text lines")
        taints = [o for o in objs if o.get("action") == "Taint"]
        self.assertEqual(sorted(o["node"] for o in taints), ["agent-1", "agent-2"], objs)
        for o in taints:
            self.assertEqual((o["level"], o["reason"]), ("info", "OutOfServiceTainted"))
            self.assertIn("Tainted %s %s" % (o["node"], TAINT_LOG), o["message"])
        # a line about no node carries no node
        start = [o for o in objs if o["message"].startswith("noderecover ")]
        self.assertTrue(start and "node" not in start[0], objs)

    def setUp_again(self):
        self.tearDown_server()
        self.server(fixtures.etcd_servers(3) + [uk("agent-1", since=100000), uk("agent-2", since=100000)])

    def tearDown_server(self):
        self.srv.stop()

    def test_variable_and_hostile_message(self):
        # a refusal whose message holds quotes, a backslash, control bytes and bytes that are
        # not UTF-8, echoing the token: the line still parses, the token is not in it
        msg = 'admission "deny" \\ said\x01\x1b[31m no \xff\xfe %s' % self.TOKEN
        self.srv.on(Reply(422, status_body(422, "Invalid", msg)), times=None, method="PATCH")
        r = self.once(env={"NODE_RECOVERY_LOG_FORMAT": "json"})
        self.assertRc(r, 1)
        objs = self.objects(r)
        failed = [o for o in objs if o.get("reason") == "ActionFailed"]
        self.assertEqual(sorted(o["node"] for o in failed), ["agent-1", "agent-2"], objs)
        for o in failed:
            self.assertEqual(o["level"], "error")
            self.assertIn('admission "deny"', o["message"])
        self.assertNotIn(self.TOKEN, r.stderr)
        self.assertNotIn(self.TOKEN[:12], r.stderr)

    def test_refused_setting_is_json(self):
        r = self.once(extra=["--log-format=json", "--poll", "0"])
        self.assertRc(r, 2)
        self.assertEqual(len(r.lines), 1, r.stderr)
        o = self.objects(r)[0]
        self.assertEqual(o["level"], "error")
        self.assertIn("--poll", o["message"])
        self.assertNoActions(r)

    def test_text_is_the_default(self):
        r = self.once()
        self.assertLogShape(r)
        self.assertFalse(any(ln.startswith("{") for ln in r.lines), r.stderr)
        bad = self.once(extra=["--log-format", "logfmt"])
        self.assertRc(bad, 2)
        self.assertLog(bad, "noderecover: --log-format 'logfmt' is neither text nor json")
