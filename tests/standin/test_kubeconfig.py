"""KUBECONFIG lists merged as kubectl merges them, and --context: against the stand-in.

Each test writes kubeconfigs into its own directory. A wrong merge or a context not picked
points the binary at a dead address (127.0.0.1:9, refused at once), so the run fails instead of
reaching the stand-in: these tests cannot pass on the wrong file's values. Never writes outside
the test's directory; never sends anything but what `once` and `plan` send.
"""
import os

import fixtures
from harness import BINARY, Case, uk

DEAD = "https://127.0.0.1:9"


def context(name, cluster, user):
    return "- name: %s\n  context:\n    cluster: %s\n    user: %s\n" % (name, cluster, user)


def cluster(name, server, ca):
    return "- name: %s\n  cluster:\n    server: %s\n    certificate-authority: %s\n" % (name, server, ca)


def user(name, token_file):
    return "- name: %s\n  user:\n    tokenFile: %s\n" % (name, token_file)


class Merge(Case):
    def setUp(self):
        super().setUp()
        self.server(fixtures.etcd_servers(3) + [uk("agent-1", since=100000)])
        # the CA and the token beside the second file, named relative to it
        self.sub = os.path.join(self.tmp, "sub")
        os.mkdir(self.sub)
        with open(self.ca) as f, open(os.path.join(self.sub, "ca.crt"), "w") as g:
            g.write(f.read())
        os.link(self.token_path, os.path.join(self.sub, "token"))

    def write(self, name, text):
        p = os.path.join(self.tmp, name)
        with open(p, "w") as f:
            f.write("apiVersion: v1\nkind: Config\n" + text)
        return p

    def run_once(self, env=None, extra=(), mode="once"):
        argv = [BINARY, mode, "--taint-after", "60", "--self-node", "self"] + list(extra)
        return self.once(argv=argv, env=env)

    def files(self):
        """a.yaml: current-context live, its context and user; sub/b.yaml: the cluster, and a
        current-context, a context, a cluster and a user of the same names that point elsewhere."""
        a = self.write("a.yaml", "current-context: live\ncontexts:\n" + context("live", "api", "op") +
                       context("dead", "nowhere", "op") +
                       "clusters:\n" + cluster("nowhere", DEAD, "sub/ca.crt") +
                       "users:\n" + user("op", "sub/token"))
        b = self.write("sub/b.yaml", "current-context: dead\ncontexts:\n" + context("live", "nowhere", "op") +
                       "clusters:\n" + cluster("api", self.srv.url, "ca.crt") + cluster("nowhere", DEAD, "ca.crt") +
                       "users:\n" + user("op", "/nonexistent/token"))
        return a, b

    def test_list_merged_first_wins(self):
        a, b = self.files()
        r = self.run_once(env={"KUBECONFIG": "%s:%s" % (a, b)})
        self.assertRc(r, 0)
        self.assertTainted("agent-1", r)
        # the start-up line says which file each part came from
        self.assertLog(r, "cluster %s from kubeconfig: context live from %s, cluster api from %s, user op from %s"
                       % (self.srv.url, a, b, a))

    def test_order_decides(self):
        # must-fail: b first, its current-context (dead) and its context "live" win: nothing is reached
        a, b = self.files()
        r = self.run_once(env={"KUBECONFIG": "%s:%s" % (b, a)})
        self.assertRc(r, (1, 2))
        self.assertEqual(self.srv.reqs(), [], "the stand-in was reached" + self.ctx(r))

    def test_missing_file_skipped(self):
        a, b = self.files()
        gone = os.path.join(self.tmp, "gone.yaml")
        r = self.run_once(env={"KUBECONFIG": "%s::%s:%s" % (gone, a, b)})
        self.assertRc(r, 0)
        self.assertTainted("agent-1", r)
        self.assertLog(r, "not there, skipped: %s" % gone)

    def test_context_flag_picks(self):
        # must-fail: the current context points at the dead address; --context live does not
        one = self.write("one.yaml", "current-context: dead\ncontexts:\n" + context("dead", "nowhere", "op") +
                         context("live", "api", "op") + "clusters:\n" + cluster("nowhere", DEAD, self.ca) +
                         cluster("api", self.srv.url, self.ca) + "users:\n" + user("op", self.token_path))
        r = self.run_once(extra=["--kubeconfig", one, "--context", "live"])
        self.assertRc(r, 0)
        self.assertTainted("agent-1", r)
        self.assertLog(r, "from kubeconfig %s (context live, chosen by --context)" % one)
        r = self.run_once(extra=["--kubeconfig", one])
        self.assertRc(r, (1, 2))

    def test_context_that_does_not_exist(self):
        a, b = self.files()
        r = self.run_once(env={"KUBECONFIG": "%s:%s" % (a, b)}, extra=["--context", "staging"])
        self.assertRc(r, 2)
        self.assertEqual(len(r.lines), 1, "one line" + self.ctx(r))
        self.assertIn("--context", r.lines[0])
        self.assertIn('"staging"', r.lines[0])
        self.assertEqual(self.srv.connections, 0, "nothing may reach the server" + self.ctx(r))

    def test_bad_later_file_refused(self):
        # every file of the list must parse, even one whose entries are never used
        a, b = self.files()
        bad = self.write("bad.yaml", "clusters: &x []\n")
        r = self.run_once(env={"KUBECONFIG": "%s:%s:%s" % (a, b, bad)})
        self.assertRc(r, 2)
        self.assertEqual(len(r.lines), 1, "one line" + self.ctx(r))
        self.assertIn(bad, r.lines[0])
        self.assertEqual(self.srv.connections, 0, "nothing may reach the server" + self.ctx(r))

    def test_plan_says_the_files(self):
        a, b = self.files()
        r = self.run_once(env={"KUBECONFIG": "%s:%s" % (a, b)}, mode="plan")
        self.assertRc(r, 0)
        self.assertTrue(r.stdout.startswith("NAME "), self.ctx(r))
        self.assertLog(r, "plan of the cluster %s from kubeconfig: context live from %s, cluster api from %s, user op from %s"
                       % (self.srv.url, a, b, a))
        self.assertNotIn(self.TOKEN, r.stderr + r.stdout)


class Home(Case):
    """kubectl's default file: $HOME/.kube/config when no flag, no KUBECONFIG and no pod account."""

    def setUp(self):
        super().setUp()
        self.server(fixtures.etcd_servers(3) + [uk("agent-1", since=100000)])
        os.mkdir(os.path.join(self.tmp, ".kube"))
        self.config = os.path.join(self.tmp, ".kube", "config")
        with open(self.config, "w") as f:
            f.write("apiVersion: v1\nkind: Config\ncurrent-context: laptop\ncontexts:\n" +
                    context("laptop", "api", "op") + "clusters:\n" + cluster("api", self.srv.url, self.ca) +
                    "users:\n" + user("op", self.token_path))

    def test_home_kubeconfig(self):
        # must-fail: the old build said no cluster was found (exit 2), as `noderecover plan` did on a laptop
        r = self.once(argv=[BINARY, "plan", "--taint-after", "60", "--self-node", "self"], env={"HOME": self.tmp})
        self.assertRc(r, 0)
        self.assertLog(r, "plan of the cluster %s from kubeconfig %s (context laptop)" % (self.srv.url, self.config))
        self.assertIn("agent-1", r.stdout)

    def test_kubeconfig_variable_beats_home(self):
        other = os.path.join(self.tmp, "other.yaml")
        with open(other, "w") as f:
            f.write("apiVersion: v1\nkind: Config\ncurrent-context: dead\ncontexts:\n" + context("dead", "nowhere", "op") +
                    "clusters:\n" + cluster("nowhere", DEAD, self.ca) + "users:\n" + user("op", self.token_path))
        r = self.once(argv=[BINARY, "once", "--taint-after", "60", "--self-node", "self"],
                      env={"HOME": self.tmp, "KUBECONFIG": other})
        self.assertRc(r, (1, 2))
        self.assertEqual(self.srv.reqs(), [], "the stand-in was reached" + self.ctx(r))


if __name__ == "__main__":
    unittest.main()
