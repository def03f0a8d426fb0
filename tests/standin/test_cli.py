"""The command line as operators use it: --version, the kubectl plugin's name, and the shell
completion scripts, which must complete every flag `noderecover help` names.

The completion scripts are run in the real shells (bash; zsh, which build.sh installs): a
script that does not parse, or that leaves out a flag, fails here.
"""
import os
import re
import shutil
import subprocess

import fixtures
from harness import BINARY, Case, uk


def run(argv, env=None, timeout=30, stdin=subprocess.DEVNULL):
    p = subprocess.run(argv, capture_output=True, env=env, timeout=timeout, stdin=stdin)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def help_flags():
    rc, out, _ = run([BINARY, "help"])
    assert rc == 0
    return sorted(set(re.findall(r"(--[a-z][a-z-]*[a-z])", out)))


def bash_complete(script, words):
    """COMPREPLY of the bash completion function for the command line `words` (the last one is
    being completed)."""
    prog = ('source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _noderecover; '
            'printf "%s\\n" "${COMPREPLY[@]}"')
    rc, out, err = run(["bash", "-c", prog, "bash", script] + list(words))
    assert rc == 0, err
    return [w for w in out.splitlines() if w]


class Version(Case):
    def test_version_flag(self):
        # must-fail: the old build refused --version as an unknown option (exit 2)
        for argv in ([BINARY, "--version"], [BINARY, "version"], [BINARY, "plan", "--version"]):
            rc, out, err = run(argv)
            self.assertEqual(rc, 0, "%s: %s" % (argv, err))
            self.assertRegex(out, r"^noderecover \S+\n$", argv)


class KubectlPlugin(Case):
    def setUp(self):
        super().setUp()
        self.bindir = os.path.join(self.tmp, "bin")
        os.mkdir(self.bindir)
        self.plugin = os.path.join(self.bindir, "kubectl-noderecover")
        os.symlink(BINARY, self.plugin)

    def test_help_says_kubectl_noderecover(self):
        # must-fail: the old build's help said "usage: noderecover" whatever it was called
        rc, out, _ = run([self.plugin, "help"])
        self.assertEqual(rc, 0)
        self.assertTrue(out.startswith("usage: kubectl noderecover "), out[:200])
        rc, out, _ = run([BINARY, "help"])
        self.assertTrue(out.startswith("usage: noderecover "), out[:200])

    def test_plan_as_the_plugin(self):
        # kubectl runs kubectl-noderecover with the words after `kubectl noderecover`
        self.server(fixtures.etcd_servers(3) + [uk("agent-1", since=100000)])
        kc = os.path.join(self.tmp, "config")
        with open(kc, "w") as f:
            f.write("apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts:\n- name: c\n  context:\n"
                    "    cluster: k\n    user: u\nclusters:\n- name: k\n  cluster:\n    server: %s\n"
                    "    certificate-authority: %s\nusers:\n- name: u\n  user:\n    tokenFile: %s\n"
                    % (self.srv.url, self.ca, self.token_path))
        r = self.once(argv=[self.plugin, "plan", "--taint-after", "60", "--self-node", "self", "--kubeconfig", kc])
        self.assertRc(r, 0)
        self.assertIn("agent-1", r.stdout)
        self.assertIn("taint now", r.stdout)
        self.assertNoActions(r)


class Completion(Case):
    def setUp(self):
        super().setUp()
        self.scripts = {}
        for shell in ("bash", "zsh"):
            rc, out, err = run([BINARY, "completion", shell])
            # must-fail: the old build had no completion command (exit 2)
            self.assertEqual(rc, 0, err)
            p = os.path.join(self.tmp, "noderecover." + shell)
            with open(p, "w") as f:
                f.write(out)
            self.scripts[shell] = p

    def test_bash_completes_every_flag(self):
        flags = help_flags()
        self.assertIn("--taint-after", flags)
        self.assertIn("--log-format", flags)
        got = bash_complete(self.scripts["bash"], ["noderecover", "once", "--"])
        self.assertEqual(sorted(set(flags) - set(got)), [], "flags of help that bash does not complete")
        self.assertIn("--version", got)
        self.assertEqual(bash_complete(self.scripts["bash"], ["noderecover", "pl"]), ["plan"])
        self.assertEqual(bash_complete(self.scripts["bash"], ["kubectl-noderecover", "once", "--log-format", ""]),
                         ["text", "json"])
        self.assertEqual(bash_complete(self.scripts["bash"], ["noderecover", "plan", "--output", "j"]), ["json"])
        self.assertEqual(bash_complete(self.scripts["bash"], ["noderecover", "once", "--dry-run", "=", "se"]),
                         ["server"])
        self.assertEqual(bash_complete(self.scripts["bash"], ["noderecover", "completion", ""]), ["bash", "zsh"])
        # a FILE flag completes file names
        open(os.path.join(self.tmp, "kubeconfig.yaml"), "w").close()
        self.assertEqual(bash_complete(self.scripts["bash"], ["noderecover", "--kubeconfig",
                                                              os.path.join(self.tmp, "kubeconf")]),
                         [os.path.join(self.tmp, "kubeconfig.yaml")])
        # a value to type: nothing offered, not the flags
        self.assertEqual(bash_complete(self.scripts["bash"], ["noderecover", "--taint-after", ""]), [])

    def test_zsh_script(self):
        zsh = shutil.which("zsh")
        if not zsh:
            self.fail("zsh is not installed (build.sh's need_packages installs it)")
        rc, _, err = run([zsh, "-n", self.scripts["zsh"]])
        self.assertEqual(rc, 0, err)
        # loaded into compinit's system, it registers for both names
        prog = ('autoload -U compinit; compinit -u -D; source "$1"; '
                'print -r -- "${_comps[noderecover]} ${_comps[kubectl-noderecover]}"')
        rc, out, err = run([zsh, "-f", "-c", prog, "zsh", self.scripts["zsh"]],
                           env={"HOME": self.tmp, "PATH": os.environ.get("PATH", "/usr/bin:/bin")})
        self.assertEqual((rc, out.strip()), (0, "_noderecover _noderecover"), err)
        with open(self.scripts["zsh"]) as f:
            text = f.read()
        for flag in help_flags():
            self.assertRegex(text, r"'%s(=-)?\[" % re.escape(flag), "zsh does not complete %s" % flag)
