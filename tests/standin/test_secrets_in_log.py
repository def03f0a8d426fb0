"""Nothing secret, and nothing that is not one printable line, reaches the log from the server.

A server or proxy that echoes the Authorization header (or the token in a message) used to put
the bearer token in the log. Every server-sent string is now redacted (the token, any piece of
it 8 bytes or longer, whatever follows "Bearer ") and made one line of valid UTF-8.
"""
import unittest

from apiserver import Fault
import test_faults
from test_faults import cluster
from harness import STAMP


class SecretsInLog(test_faults.FaultCase):
    def refuse(self, **kw):
        self.server(cluster())
        self.srv.on(Fault("status", **kw), times=None, list_only=True)
        r = self.once(taint_after=60, timeout=60)
        self.assertRc(r, 1)
        self.assertNoActions(r)
        return r

    def assertClean(self, r):
        out = r.stderr + r.stdout
        self.assertNotIn(self.TOKEN, out)
        for i in range(len(self.TOKEN) - 8 + 1):
            self.assertNotIn(self.TOKEN[i:i + 8], out, "a piece of the token is in the log" + self.ctx(r))
        for ln in r.lines:
            self.assertRegex(ln, STAMP, "a server string split the log line" + self.ctx(r))
        self.assertNotIn("\ufffd", out, "invalid UTF-8 reached the log" + self.ctx(r))

    def test_status_message_echoing_the_token(self):
        msg = "forbidden for Authorization: Bearer %s; token %s\nFAKE second line" % (self.TOKEN, self.TOKEN)
        r = self.refuse(status=403, reason="Forbidden", message=msg)
        self.assertClean(r)
        self.assertLog(r, "Bearer [redacted] token [redacted]")
        self.assertLog(r, "FAKE second line")     # on the stamped line, not a line of its own

    def test_plain_body_echoing_a_piece_of_the_token(self):
        body = b"bad request from " + self.TOKEN[4:30].encode() + b" here\n"
        r = self.refuse(status=400, body=body, content_type="text/plain")
        self.assertClean(r)
        self.assertLog(r, "bad request from [redacted] here")

    def test_bearer_value_of_another_token(self):
        r = self.refuse(status=401, reason="Unauthorized", message="Bearer some-other-secret-token rejected")
        self.assertClean(r)
        self.assertLog(r, "Bearer [redacted] rejected")
        self.assertNoLog(r, "some-other-secret-token")

    def test_non_utf8_in_a_message_shown_escaped(self):
        r = self.refuse(status=400, body=b"caf\xc3\xa9 \xff\xfe end", content_type="text/plain")
        self.assertClean(r)
        self.assertLog(r, "caf\u00e9 \\xff\\xfe end")

    def test_non_utf8_content_type_shown_escaped(self):
        self.server(cluster())
        self.srv.on(Fault("status", status=200, body=b"hello",
                          headers=[("Content-Type", "text/html; charset=\xff\xfe")]), times=None, list_only=True)
        r = self.once(taint_after=60, timeout=60)
        self.assertRc(r, 1)
        self.assertClean(r)
        self.assertLog(r, "charset=\\xff\\xfe")


if __name__ == "__main__":
    unittest.main()
