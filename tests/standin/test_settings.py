"""Start-up refusals (exit 2, one line naming the setting, nothing sent) and flag/env precedence."""
import os
import unittest

import fixtures
from harness import BINARY, Case, uk

LABEL = fixtures.DEFAULT_PRUNE_LABEL


class Refusal(Case):
    def setUp(self):
        super().setUp()
        self.server(fixtures.etcd_servers(3) + [uk("agent-1", since=100000, labels={LABEL: "true"})])

    def refused(self, names, argv=None, env=None, **kw):
        r = self.once(argv=argv, env=env, timeout=20, **kw)
        self.assertRc(r, 2)
        self.assertEqual(len(r.lines), 1, "exactly one line on a refusal" + self.ctx(r))
        low = r.lines[0].lower()
        self.assertTrue(any(n.lower() in low for n in names),
                        "the line names the setting (%s)%s" % (" or ".join(names), self.ctx(r)))
        self.assertNotIn(self.TOKEN, r.stderr + r.stdout)
        self.assertEqual(self.srv.connections, 0, "nothing may reach the server" + self.ctx(r))
        self.assertEqual(self.srv.reqs(), [])
        return r

    PRUNE = ("prune-after", "PRUNE_AFTER")
    TAINT = ("taint-after", "NODE_RECOVERY_AFTER_SECONDS")

    def test_prune_equal_to_taint(self):
        self.refused(self.PRUNE, taint_after=60, prune_after=60)

    def test_prune_below_taint(self):
        self.refused(self.PRUNE, taint_after=600, prune_after=300)

    def test_prune_not_greater_from_env(self):
        self.refused(self.PRUNE, taint_after=None, env={"NODE_RECOVERY_AFTER_SECONDS": "300",
                                                         "NODE_RECOVERY_PRUNE_AFTER_SECONDS": "300"})

    def test_prune_not_whole_number(self):
        for v in ("abc", "300.5", "300sec", "-400", "1e3", " 300"):
            with self.subTest(prune=v):
                self.refused(self.PRUNE, taint_after=60, prune_after=v)

    def test_taint_not_whole_number(self):
        for v in ("abc", "1.5", "60S", "-60", "0x3c", "99999999999999999999999"):
            with self.subTest(taint=v):
                self.refused(self.TAINT, taint_after=v)

    def test_taint_not_whole_number_from_env(self):
        self.refused(self.TAINT, taint_after=None, env={"NODE_RECOVERY_AFTER_SECONDS": "ten"})

    # Durations as kubectl users type them: what is not one is refused, never read as another.
    BAD_DURATIONS = ("5x", "-5m", "+5m", "1.5h", "2d", "500ms", "5m3", "30m1h", "1m1m", "5 m", "h",
                     "87600h1s", "315360001", "9223372036854775807s")

    def test_taint_bad_duration(self):
        for v in self.BAD_DURATIONS:
            with self.subTest(taint=v):
                self.refused(self.TAINT, taint_after=v)

    def test_bad_duration_from_env(self):
        for name in ("NODE_RECOVERY_AFTER_SECONDS", "NODE_RECOVERY_PRUNE_AFTER_SECONDS",
                     "NODE_RECOVERY_POLL_SECONDS", "NODE_RECOVERY_STORM_COOLDOWN"):
            for v in ("5x", "-5m", "1.5h", "2d"):
                with self.subTest(name=name, value=v):
                    env = {"NODE_RECOVERY_AFTER_SECONDS": "60", name: v}
                    self.refused((name,), taint_after=None, env=env)

    def test_other_bad_durations(self):
        for flag in ("--prune-after", "--poll", "--storm-cooldown"):
            for v in ("5x", "-5m", "1.5h", "87600h1s"):
                with self.subTest(flag=flag, value=v):
                    self.refused((flag,), extra=[flag, v])

    def test_poll_past_a_day(self):
        self.refused(("--poll",), extra=["--poll", "24h0m1s"])

    def test_prune_duration_not_greater(self):
        # 1h read as seconds would be 1, read right it is not greater than 2h: refused either way,
        # and the line gives both in seconds
        r = self.refused(self.PRUNE, taint_after="2h", prune_after="1h")
        self.assertIn("(3600)", r.lines[0])
        self.assertIn("(7200)", r.lines[0])

    def test_taint_missing(self):
        self.refused(self.TAINT, taint_after=None)

    def test_unknown_flag(self):
        self.refused(("--frobnicate",), extra=["--frobnicate", "1"])

    def test_unreadable_token_file(self):
        os.unlink(self.token_path)
        self.refused(("token",))

    def test_empty_token_file(self):
        self.write_token("\n")
        self.refused(("token",))

    def test_token_that_would_bend_the_headers(self):
        # A token with a line break would add headers of the file's choosing to every request.
        self.write_token("abc\r\nX-Injected: 1")
        self.refused(("token",))

    def test_unreadable_ca_file(self):
        argv = self.args()
        argv[argv.index("--ca-file") + 1] = os.path.join(self.tmp, "missing-ca.crt")
        self.refused(("ca",), argv=argv)

    def test_server_not_https(self):
        argv = self.args()
        argv[argv.index("--server") + 1] = self.srv.url.replace("https://", "http://")
        self.refused(("server", "https"), argv=argv)

    def test_insecure_kubeconfig_refused(self):
        kc = os.path.join(self.tmp, "kubeconfig")
        with open(kc, "w") as f:
            f.write("apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    server: %s\n"
                    "    insecure-skip-tls-verify: true\n  name: default\ncontexts:\n- context:\n"
                    "    cluster: default\n    user: default\n  name: default\ncurrent-context: default\n"
                    "users:\n- name: default\n  user:\n    token: %s\n" % (self.srv.url, self.TOKEN))
        argv = [BINARY, "once", "--kubeconfig", kc, "--taint-after", "60", "--self-node", "self"]
        self.refused(("insecure", "kubeconfig"), argv=argv)

    def test_exec_plugin_kubeconfig_refused(self):
        kc = os.path.join(self.tmp, "kubeconfig")
        with open(kc, "w") as f:
            f.write("apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    server: %s\n"
                    "    certificate-authority: %s\n  name: default\ncontexts:\n- context:\n"
                    "    cluster: default\n    user: default\n  name: default\ncurrent-context: default\n"
                    "users:\n- name: default\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
                    "      command: /bin/true\n" % (self.srv.url, self.ca))
        argv = [BINARY, "once", "--kubeconfig", kc, "--taint-after", "60", "--self-node", "self"]
        self.refused(("exec", "kubeconfig"), argv=argv)


class Precedence(Case):
    def setUp(self):
        super().setUp()
        self.server(fixtures.etcd_servers(3) + [uk("self", since=7200), uk("agent-1", since=120)])

    def test_taint_after_from_env(self):
        r = self.once(taint_after=None, env={"NODE_RECOVERY_AFTER_SECONDS": "60"})
        self.assertRc(r, 0)
        self.assertTainted("agent-1", r)

    def test_flag_beats_env_taint_after(self):
        r = self.once(taint_after=60, env={"NODE_RECOVERY_AFTER_SECONDS": "100000"})
        self.assertRc(r, 0)
        self.assertTainted("agent-1", r)

    def test_flag_beats_env_taint_after_other_way(self):
        r = self.once(taint_after=100000, env={"NODE_RECOVERY_AFTER_SECONDS": "60"})
        self.assertRc(r, 0)
        self.assertUntouched("agent-1", r)

    def test_taint_after_as_duration(self):
        # agent-1 is Unknown for 120 s: 1m30s taints it, 3m does not (3m read as 3 s would)
        r = self.once(taint_after="1m30s")
        self.assertRc(r, 0)
        self.assertTainted("agent-1", r)

    def test_taint_after_duration_not_seconds(self):
        r = self.once(taint_after="3m")
        self.assertRc(r, 0)
        self.assertUntouched("agent-1", r)
        r = self.once(taint_after=None, env={"NODE_RECOVERY_AFTER_SECONDS": "1h"})
        self.assertRc(r, 0)
        self.assertUntouched("agent-1", r)

    def test_taint_after_duration_from_env(self):
        r = self.once(taint_after=None, env={"NODE_RECOVERY_AFTER_SECONDS": "90s"})
        self.assertRc(r, 0)
        self.assertTainted("agent-1", r)

    def test_prune_after_as_duration(self):
        self.srv.touch("agent-1", lambda n: n["metadata"]["labels"].update({LABEL: "true"}))
        self.listed["agent-1"] = self.srv.node("agent-1")
        r = self.once(taint_after="1m", prune_after="1m40s")
        self.assertRc(r, 0)
        self.assertDeleted("agent-1", r)

    def test_flag_beats_env_self_node(self):
        r = self.once(taint_after=60, self_node="self", env={"NODE_RECOVERY_SELF_NODE": "agent-1"})
        self.assertRc(r, 0)
        self.assertTainted("agent-1", r)
        self.assertUntouched("self", r)

    def test_flag_beats_env_prune_after(self):
        self.srv.touch("agent-1", lambda n: n["metadata"]["labels"].update({LABEL: "true"}))
        self.listed["agent-1"] = self.srv.node("agent-1")
        r = self.once(taint_after=60, prune_after=100, env={"NODE_RECOVERY_PRUNE_AFTER_SECONDS": "100000"})
        self.assertRc(r, 0)
        self.assertDeleted("agent-1", r)

    def test_flag_beats_env_prune_label(self):
        self.srv.touch("agent-1", lambda n: n["metadata"]["labels"].update({"a.example.io/x": "true"}))
        self.listed["agent-1"] = self.srv.node("agent-1")
        r = self.once(taint_after=60, prune_after=100, extra=["--prune-label", "a.example.io/x"],
                      env={"NODE_RECOVERY_PRUNE_LABEL": "b.example.io/y"})
        self.assertRc(r, 0)
        self.assertDeleted("agent-1", r)

    def test_flag_beats_env_annotation(self):
        r = self.once(taint_after=60, extra=["--annotation", "a.example.io/at"],
                      env={"NODE_RECOVERY_ANNOTATION": "b.example.io/at"})
        self.assertRc(r, 0)
        self.assertTainted("agent-1", r, annotation="a.example.io/at")
        self.assertNotIn("b.example.io/at", self.srv.node("agent-1")["metadata"]["annotations"])


if __name__ == "__main__":
    unittest.main()
