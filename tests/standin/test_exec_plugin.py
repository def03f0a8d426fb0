"""Exec credential plugins (client.authentication.k8s.io/v1 and v1beta1), run as kubectl runs
them: the command from the kubeconfig with its args and env, no shell, stdin /dev/null, a
deadline; its token or client certificate used, run again when it expires and on a 401; bad
output refused with one line and nothing sent. The plugin is credplugin.py, run by `python3`
looked up on the PATH.
"""
import base64
import json
import os
import signal
import socket
import subprocess
import time

import fixtures
from apiserver import Reply, StandIn, status_body
from harness import BINARY, Case, certdir, uk
from test_listen import free_port

HERE = os.path.dirname(os.path.abspath(__file__))
PLUGIN = os.path.join(HERE, "credplugin.py")


class ExecPlugin(Case):
    API = "client.authentication.k8s.io/v1"

    def setUp(self):
        super().setUp()
        self.state = os.path.join(self.tmp, "plugin")
        os.mkdir(self.state)

    def nodes(self):
        return fixtures.etcd_servers(3) + [uk("agent-1", since=100000)]

    def kubeconfig(self, mode="token", env=None, extra="", api=None):
        env = dict({"PLUGIN_STATE": self.state, "PLUGIN_TOKENS": self.TOKEN}, **(env or {}))
        env_yaml = "".join("      - name: %s\n        value: \"%s\"\n" % (k, v) for k, v in env.items())
        kc = os.path.join(self.tmp, "config")
        with open(kc, "w") as f:
            f.write("apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts:\n- name: c\n  context:\n"
                    "    cluster: k\n    user: u\nclusters:\n- name: k\n  cluster:\n    server: %s\n"
                    "    certificate-authority: %s\nusers:\n- name: u\n  user:\n    exec:\n"
                    "      apiVersion: %s\n      command: python3\n      args:\n      - %s\n      - %s\n"
                    "      env:\n%s      interactiveMode: Never\n%s"
                    % (self.srv.url, self.ca, api or self.API, PLUGIN, mode, env_yaml.replace("      - ", "      - ", 1), extra))
        return kc

    def argv(self, kc, mode="once", extra=()):
        return [BINARY, mode, "--kubeconfig", kc, "--taint-after", "60", "--self-node", "self"] + list(extra)

    def plugin_runs(self):
        try:
            with open(os.path.join(self.state, "runs")) as f:
                return [json.loads(ln) for ln in f]
        except OSError:
            return []

    def test_token_plugin(self):
        # must-fail: the old build refused every exec plugin (exit 2, nothing sent)
        self.server(self.nodes())
        kc = self.kubeconfig(env={"PLUGIN_FLAVOR": "eks"}, extra="      provideClusterInfo: true\n")
        r = self.once(argv=self.argv(kc))
        self.assertRc(r, 0)
        self.assertTainted("agent-1", r)
        self.assertLog(r, "authenticating with an exec plugin's token")
        runs = self.plugin_runs()
        self.assertEqual(len(runs), 1, runs)
        run = runs[0]
        self.assertEqual(run["argv"], ["token"], "the spec's args")
        self.assertEqual(run["env"].get("PLUGIN_FLAVOR"), "eks", "the spec's env")
        self.assertEqual((run["stdin"], run["tty"]), ("", False), "stdin is /dev/null, never a terminal")
        self.assertTrue(run["pgid_is_pid"], "the plugin runs in a process group of its own")
        info = json.loads(run["info"])
        self.assertEqual(info["kind"], "ExecCredential")
        self.assertEqual(info["apiVersion"], self.API)
        self.assertIs(info["spec"]["interactive"], False)
        cl = info["spec"]["cluster"]
        self.assertEqual(cl["server"], self.srv.url)
        with open(self.ca, "rb") as f:
            self.assertEqual(base64.b64decode(cl["certificate-authority-data"]), f.read())

    def test_v1beta1_without_cluster_info(self):
        self.server(self.nodes())
        r = self.once(argv=self.argv(self.kubeconfig(api="client.authentication.k8s.io/v1beta1")))
        self.assertRc(r, 0)
        self.assertTainted("agent-1", r)
        info = json.loads(self.plugin_runs()[0]["info"])
        self.assertEqual(info, {"kind": "ExecCredential", "apiVersion": "client.authentication.k8s.io/v1beta1",
                                "spec": {"interactive": False}})

    def test_token_never_logged(self):
        # must-fail: the server echoes the plugin's token in a refusal; the log says [redacted]
        # (the plugin's token must be the one kube_clean redacts, in text and in JSON alike)
        self.server(self.nodes())
        self.srv.on(Reply(422, status_body(422, "Invalid", "admission webhook: Authorization: Bearer %s is not allowed "
                                           "to taint; token %s" % (self.TOKEN, self.TOKEN))), times=None, method="PATCH")
        kc = self.kubeconfig(env={"PLUGIN_STDERR": "debug: issued %s" % self.TOKEN})
        for fmt in ("text", "json"):
            r = self.once(argv=self.argv(kc, extra=["--log-format", fmt]))
            self.assertRc(r, 1)
            self.assertLog(r, "admission webhook")
            self.assertLog(r, "[redacted]")
            self.assertNotIn(self.TOKEN[8:20], r.stderr + r.stdout)

    def test_hanging_plugin_killed_at_deadline(self):
        self.server(self.nodes())
        kc = self.kubeconfig(mode="hang")
        t0 = time.monotonic()
        # the test scale makes the 30 s deadline 3 s
        r = self.once(argv=self.argv(kc), env={"NODERECOVER_TEST_DEADLINE_SCALE": "10"}, timeout=60)
        took = time.monotonic() - t0
        self.assertRc(r, 2)
        self.assertEqual(len(r.lines), 1, "one line" + self.ctx(r))
        self.assertIn("did not finish within 3s; killed", r.lines[0])
        self.assertLess(took, 20, "the plugin was waited for past its deadline")
        self.assertEqual(self.srv.connections, 0, "nothing may reach the server" + self.ctx(r))
        # what it started went with it (its process group)
        with open(os.path.join(self.state, "child")) as f:
            child = int(f.read())
        gone = False
        for _ in range(50):
            try:
                os.kill(child, 0)
                with open("/proc/%d/stat" % child) as f:
                    if f.read().split(") ")[1].startswith("Z"):
                        gone = True
                        break
            except (ProcessLookupError, FileNotFoundError):
                gone = True
                break
            time.sleep(0.1)
        if not gone:
            os.kill(child, signal.SIGKILL)
        self.assertTrue(gone, "the plugin's child still runs")

    def test_garbled_output_refused(self):
        self.server(self.nodes())
        r = self.once(argv=self.argv(self.kubeconfig(mode="garbled")))
        self.assertRc(r, 2)
        self.assertEqual(len(r.lines), 1, "one line" + self.ctx(r))
        self.assertIn("exec plugin python3: its output is not JSON", r.lines[0])
        self.assertNotIn(self.TOKEN[:12], r.stderr)
        self.assertEqual(self.srv.connections, 0, "nothing may reach the server" + self.ctx(r))

    def test_wrong_output_refused(self):
        self.server(self.nodes())
        cases = [({"PLUGIN_API": "client.authentication.k8s.io/v1beta1"}, "token", "apiVersion is not " + self.API),
                 ({"PLUGIN_TOKENS": ""}, "token", "neither a token nor clientCertificateData"),
                 ({}, "fail", "exited with status 3: error: the session expired; run login again")]
        for env, mode, words in cases:
            r = self.once(argv=self.argv(self.kubeconfig(mode=mode, env=env)))
            self.assertRc(r, 2)
            self.assertEqual(len(r.lines), 1, "one line" + self.ctx(r))
            self.assertIn(words, r.lines[0])
            self.assertNotIn("second line", r.stderr)
        self.assertEqual(self.srv.connections, 0, "nothing may reach the server" + self.ctx(r))

    def test_command_not_found(self):
        # a command not on the PATH: one line with the spec's installHint, as kubectl says it
        self.server(self.nodes())
        kc = self.kubeconfig(extra="      installHint: \"install it with: apt install credplugin\"\n")
        with open(kc) as f:
            text = f.read()
        with open(kc, "w") as f:
            f.write(text.replace("command: python3", "command: no-such-credential-plugin"))
        r = self.once(argv=self.argv(kc))
        self.assertRc(r, 2)
        self.assertEqual(len(r.lines), 1, "one line" + self.ctx(r))
        self.assertIn("exec plugin no-such-credential-plugin cannot be run: No such file or directory; "
                      "install it with: apt install credplugin", r.lines[0])
        self.assertEqual(self.srv.connections, 0, "nothing may reach the server" + self.ctx(r))

    def test_run_again_on_401(self):
        # the first token is refused (revoked before its time): run again, once, and retry
        self.server(self.nodes())
        kc = self.kubeconfig(env={"PLUGIN_TOKENS": "stale-token-0123456789," + self.TOKEN})
        r = self.once(argv=self.argv(kc))
        self.assertRc(r, 0)
        self.assertTainted("agent-1", r)
        self.assertEqual(len(self.plugin_runs()), 2, self.ctx(r))

    def test_401_twice_fails_without_looping(self):
        self.server(self.nodes())
        kc = self.kubeconfig(env={"PLUGIN_TOKENS": "stale-token-0123456789"})
        r = self.once(argv=self.argv(kc))
        self.assertRc(r, (1, 2))
        self.assertNoActions(r)
        self.assertLessEqual(len(self.plugin_runs()), 4, "the plugin is run again once a 401, not in a loop")

    def test_expired_token_run_again(self):
        # expirationTimestamp honoured: a token that expires in 2 s is fetched again after it
        self.server(self.nodes())
        kc = self.kubeconfig(env={"PLUGIN_EXPIRE_IN": "2"})
        argv = self.argv(kc, mode="run", extra=["--poll", "1s"])

        errp = os.path.join(self.tmp, "run.err")
        with open(errp, "wb") as ef:
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=ef, stderr=ef, env=self.env())
            try:
                deadline = time.monotonic() + 20
                while time.monotonic() < deadline and len(self.plugin_runs()) < 3:
                    time.sleep(0.2)
            finally:
                p.send_signal(signal.SIGTERM)
                p.wait(timeout=15)
        runs = len(self.plugin_runs())
        self.assertGreaterEqual(runs, 3, "the plugin ran %d times in 20 s with a token of 2 s" % runs)
        # the requests after each run carried a token the server took (no 401 met first)
        self.assertEqual([q for q in self.srv.reqs() if q.status == 401], [], "a request went with an expired token")

    def test_later_bad_output_acts_on_nothing(self):
        # the token expires; the plugin's next output is garbage: the pass fails with one line
        # saying so, nothing is acted on, and the token is not in the log
        self.server(fixtures.etcd_servers(3))
        kc = self.kubeconfig(env={"PLUGIN_EXPIRE_IN": "2", "PLUGIN_MODES": "token,garbled"})
        argv = self.argv(kc, mode="run", extra=["--poll", "1s"])
        errp = os.path.join(self.tmp, "run.err")
        with open(errp, "wb") as ef:
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=ef, stderr=ef, env=self.env())
            try:
                deadline = time.monotonic() + 20
                while time.monotonic() < deadline and len(self.plugin_runs()) < 3:
                    time.sleep(0.2)
                # a node goes Unknown only now, with the plugin failing
                self.srv.add_node(uk("agent-1", since=100000))
                time.sleep(3)
            finally:
                p.send_signal(signal.SIGTERM)
                p.wait(timeout=15)
        with open(errp, "rb") as f:
            err = f.read().decode("utf-8", "replace")
        self.assertGreaterEqual(len(self.plugin_runs()), 3, err)
        bad = [ln for ln in err.splitlines() if "exec plugin python3: its output is not JSON" in ln]
        self.assertTrue(bad, err)
        self.assertEqual(self.srv.mutating(), [], "acted on while the plugin failed\n" + err)
        self.assertNotIn(self.TOKEN[:12], err)

    def test_no_descriptor_of_ours_reaches_the_plugin(self):
        # the plugin gets /dev/null and its two pipes: not the API connection, not a scraper's
        # connection to --listen held open while the plugin runs again
        self.server(fixtures.etcd_servers(3))
        port = free_port()
        kc = self.kubeconfig(env={"PLUGIN_EXPIRE_IN": "2"})
        argv = self.argv(kc, mode="run", extra=["--poll", "1s", "--listen", "127.0.0.1:%d" % port])
        errp = os.path.join(self.tmp, "run.err")
        held = []
        with open(errp, "wb") as ef:
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=ef, stderr=ef, env=self.env())
            try:
                deadline = time.monotonic() + 20
                while time.monotonic() < deadline and len(self.plugin_runs()) < 4:
                    # a scraper that connected and has not sent its request yet
                    try:
                        held.append(socket.create_connection(("127.0.0.1", port), timeout=1))
                    except OSError:
                        pass
                    time.sleep(0.3)
            finally:
                for c in held:
                    c.close()
                p.send_signal(signal.SIGTERM)
                p.wait(timeout=15)
        runs = self.plugin_runs()
        self.assertGreaterEqual(len(runs), 3, runs)
        for run in runs:
            leaked = [fd for fd in run["fds"] if fd.startswith("socket:")]
            self.assertEqual(leaked, [], "the plugin inherited sockets: %r" % run["fds"])

    def test_sigterm_while_the_plugin_hangs(self):
        # a stop is not held up by the plugin's 30 s deadline: it and what it started are killed
        self.server(fixtures.etcd_servers(3))
        kc = self.kubeconfig(env={"PLUGIN_EXPIRE_IN": "2", "PLUGIN_MODES": "token,hang"})
        argv = self.argv(kc, mode="run", extra=["--poll", "1s"])
        errp = os.path.join(self.tmp, "run.err")
        child_file = os.path.join(self.state, "child")
        with open(errp, "wb") as ef:
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=ef, stderr=ef, env=self.env())
            try:
                deadline = time.monotonic() + 20
                while time.monotonic() < deadline and not os.path.exists(child_file):
                    time.sleep(0.1)
                self.assertTrue(os.path.exists(child_file), "the plugin never hung")
                time.sleep(0.5)
                t0 = time.monotonic()
                p.send_signal(signal.SIGTERM)
                rc = p.wait(timeout=25)
                took = time.monotonic() - t0
            finally:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        with open(errp, "rb") as f:
            err = f.read().decode("utf-8", "replace")
        self.assertEqual(rc, 0, err)
        self.assertLess(took, 5, "stopping waited %.1fs for the plugin\n%s" % (took, err))
        with open(child_file) as f:
            child = int(f.read())
        for _ in range(30):
            try:
                with open("/proc/%d/stat" % child) as f:
                    if f.read().split(") ")[1].startswith("Z"):
                        break
            except FileNotFoundError:
                break
            time.sleep(0.1)
        else:
            os.kill(child, signal.SIGKILL)
            self.fail("the plugin's child still runs after the stop")

    def test_client_certificate_plugin(self):
        self.srv = StandIn(certdir(), nodes=self.nodes(), client_ca=True, token="unused-token").start()
        self.addCleanup(self.srv.stop)
        self.listed = {n: self.srv.node(n) for n in self.srv.nodes}
        d = certdir()
        kc = self.kubeconfig(mode="cert", env={"PLUGIN_CERT": os.path.join(d, "client.crt"),
                                               "PLUGIN_KEY": os.path.join(d, "client.key")})
        r = self.once(argv=self.argv(kc))
        self.assertRc(r, 0)
        self.assertTainted("agent-1", r)
        self.assertLog(r, "authenticating with an exec plugin's client certificate")
        q = self.srv.reqs()[0]
        self.assertIsNotNone(q.client_cert, "the plugin's client certificate was presented")
        self.assertIsNone(q.header("Authorization"))

    def test_spec_refusals(self):
        self.server(self.nodes())
        for extra, api, words in (("", "client.authentication.k8s.io/v1alpha1", "v1alpha1 was removed"),
                                  ("    token: also-a-token\n", None, "an exec plugin and a token")):
            kc = self.kubeconfig(api=api)
            if extra:
                with open(kc) as f:
                    text = f.read()
                with open(kc, "w") as f:
                    f.write(text.replace("    exec:\n", extra + "    exec:\n"))
            r = self.once(argv=self.argv(kc))
            self.assertRc(r, 2)
            self.assertEqual(len(r.lines), 1, "one line" + self.ctx(r))
            self.assertIn(words, r.lines[0])
        kc = self.kubeconfig()
        with open(kc) as f:
            text = f.read()
        with open(kc, "w") as f:
            f.write(text.replace("interactiveMode: Never", "interactiveMode: Always"))
        r = self.once(argv=self.argv(kc))
        self.assertRc(r, 2)
        self.assertIn("interactiveMode is Always", r.stderr)
        self.assertEqual(self.plugin_runs(), [], "a refused spec is never run")
