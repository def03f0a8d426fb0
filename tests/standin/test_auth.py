"""Credentials and recoverable failures: token rotation, Retry-After, retries, kubeconfig, TLS names."""
import base64
import os
import unittest

import fixtures
from apiserver import Fault, Reply, StandIn, status_body
from harness import BINARY, Case, certdir, uk


def cluster():
    return fixtures.etcd_servers(3) + [uk("self", since=7200), uk("agent-1", since=120)]


def b64file(path):
    with open(path, "rb") as f:
        return base64.b64encode(f.read()).decode()


class Recover(Case):
    def test_token_rotation_reread_after_401(self):
        self.server(cluster())

        def rotate(srv, req):
            # the first request carries the token the binary read at start; rotate it under it
            if not getattr(srv, "_rotated", False):
                srv._rotated = True
                srv.set_token("rotated-token-XYZ")
                self.write_token("rotated-token-XYZ")
        self.srv.before(rotate)
        r = self.once(taint_after=60)
        self.assertRc(r, 0)
        st = [q.status for q in self.srv.reqs(reviews=True)]
        self.assertEqual(st[0], 401, self.ctx(r))
        self.assertTainted("agent-1", r)
        for q in self.srv.reqs(reviews=True)[1:]:
            self.assertEqual(q.header("Authorization"), "Bearer rotated-token-XYZ")
        self.assertNotIn("rotated-token-XYZ", r.stderr)
        self.assertNotIn(self.TOKEN, r.stderr)

    def _retry_after(self, rep, seconds):
        self.server(cluster())
        self.srv.on(rep, times=1, list_only=True)
        r = self.once(taint_after=60)
        self.assertRc(r, 0)
        ls = self.srv.reqs(list_only=True)
        self.assertGreaterEqual(len(ls), 2, self.ctx(r))
        gap = ls[1].time - ls[0].time
        self.assertGreaterEqual(gap, seconds - 0.2, "Retry-After %ss not honoured: retried after %.2fs%s" % (
            seconds, gap, self.ctx(r)))
        self.assertLess(gap, seconds + 10)
        self.assertTainted("agent-1", r)

    def test_429_retry_after_honoured(self):
        self._retry_after(Reply(429, "Too many requests, please try again later.\n",
                                headers=[("Retry-After", "2")], content_type="text/plain; charset=utf-8"), 2)

    def test_503_retry_after_honoured(self):
        self._retry_after(Reply(503, status_body(503, "ServiceUnavailable", "the server is currently unable to handle the request"),
                                headers=[("Retry-After", "1")]), 1)

    def test_5xx_then_success(self):
        self.server(cluster())
        self.srv.on(Reply(500, status_body(500, "InternalError", "Internal error occurred")), times=2, list_only=True)
        r = self.once(taint_after=60)
        self.assertRc(r, 0)
        self.assertTainted("agent-1", r)

    def test_dropped_connection_then_success(self):
        self.server(cluster())
        self.srv.on(Fault("close_no_reply"), times=1, list_only=True)
        r = self.once(taint_after=60)
        self.assertRc(r, 0)
        self.assertTainted("agent-1", r)

    def test_patch_429_then_success(self):
        self.server(cluster())
        self.srv.on(Reply(429, "Too many requests, please try again later.\n", headers=[("Retry-After", "1")],
                          content_type="text/plain; charset=utf-8"), times=1, method="PATCH")
        r = self.once(taint_after=60)
        self.assertRc(r, 0)
        self.assertTainted("agent-1", r)

    def kubeconfig(self, user_yaml, server=None, ca_yaml=None):
        kc = os.path.join(self.tmp, "k3s.yaml")
        ca_yaml = ca_yaml or "certificate-authority-data: %s" % b64file(self.ca)
        with open(kc, "w") as f:
            f.write("apiVersion: v1\nclusters:\n- cluster:\n    %s\n    server: %s\n  name: default\n"
                    "contexts:\n- context:\n    cluster: default\n    user: default\n  name: default\n"
                    "current-context: default\nkind: Config\npreferences: {}\nusers:\n- name: default\n"
                    "  user:\n%s" % (ca_yaml, server or self.srv.url, user_yaml))
        return kc

    def kc_argv(self, kc):
        return [BINARY, "once", "--kubeconfig", kc, "--taint-after", "60", "--self-node", "self"]

    def test_kubeconfig_client_certificate_like_k3s(self):
        self.srv = StandIn(certdir(), nodes=cluster(), client_ca=True, token="unused-token").start()
        self.addCleanup(self.srv.stop)
        self.listed = {n: self.srv.node(n) for n in self.srv.nodes}
        d = certdir()
        kc = self.kubeconfig("    client-certificate-data: %s\n    client-key-data: %s\n" % (
            b64file(os.path.join(d, "client.crt")), b64file(os.path.join(d, "client.key"))))
        r = self.once(argv=self.kc_argv(kc))
        self.assertRc(r, 0)
        self.assertTainted("agent-1", r)
        q = self.srv.reqs()[0]
        self.assertIsNotNone(q.client_cert, "a client certificate was presented")
        self.assertIsNone(q.header("Authorization"))

    def test_kubeconfig_client_certificate_files(self):
        self.srv = StandIn(certdir(), nodes=cluster(), client_ca=True, token="unused-token").start()
        self.addCleanup(self.srv.stop)
        self.listed = {n: self.srv.node(n) for n in self.srv.nodes}
        d = certdir()
        kc = self.kubeconfig("    client-certificate: %s\n    client-key: %s\n" % (
            os.path.join(d, "client.crt"), os.path.join(d, "client.key")),
            ca_yaml="certificate-authority: %s" % self.ca)
        r = self.once(argv=self.kc_argv(kc))
        self.assertRc(r, 0)
        self.assertTainted("agent-1", r)

    def test_kubeconfig_token_via_env(self):
        self.server(cluster())
        kc = self.kubeconfig("    token: %s\n" % self.TOKEN)
        r = self.once(argv=self.kc_argv(kc)[:2] + self.kc_argv(kc)[4:], env={"KUBECONFIG": kc})
        self.assertRc(r, 0)
        self.assertTainted("agent-1", r)
        self.assertNotIn(self.TOKEN, r.stderr)

    def test_kubeconfig_token_file(self):
        self.server(cluster())
        kc = self.kubeconfig("    tokenFile: %s\n" % self.token_path)
        r = self.once(argv=self.kc_argv(kc))
        self.assertRc(r, 0)
        self.assertTainted("agent-1", r)

    def test_tls_server_name(self):
        self.srv = StandIn(certdir(), cert="othername", nodes=cluster(), token=self.TOKEN).start()
        self.addCleanup(self.srv.stop)
        self.listed = {n: self.srv.node(n) for n in self.srv.nodes}
        r = self.once(taint_after=60, extra=["--tls-server-name", "other.example"])
        self.assertRc(r, 0)
        self.assertTainted("agent-1", r)

    def test_server_by_dns_name(self):
        self.server(cluster())
        argv = self.args(taint_after=60)
        argv[argv.index("--server") + 1] = "https://localhost:%d" % self.srv.port
        r = self.once(argv=argv)
        self.assertRc(r, 0)
        self.assertTainted("agent-1", r)


if __name__ == "__main__":
    unittest.main()
