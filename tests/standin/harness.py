"""What every stand-in test shares: certificates, a server per test, running the binary.

Each test gets its own temporary directory and its own StandIn on a free 127.0.0.1 port, so
tests can run in parallel processes. The TLS material is made once per process.
The binary under test is $NODERECOVER_BINARY (run.sh sets it).

The binary is started with NODE_RECOVERY_WATCH=false, so the modules written for the polling
loop keep their meaning (a list every --poll); a test that wants the watch sets WATCH = True on
its class (NODE_RECOVERY_WATCH=true), or passes env={"NODE_RECOVERY_WATCH": None} for the default.
"""
import atexit
import datetime
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import certs
import fixtures
from apiserver import SSAR_PATH, Reply, StandIn, status_body

HERE = os.path.dirname(os.path.abspath(__file__))
BINARY = os.path.abspath(os.environ.get("NODERECOVER_BINARY",
                                        os.path.join(HERE, "..", "..", "build", "noderecover")))
MODEL = BINARY.endswith(".py")   # the Python model of the contract (refwatcher.py), not the binary
OOS = fixtures.OOS_KEY
ANN = fixtures.DEFAULT_ANNOTATION
ANN_ESC = ANN.replace("~", "~0").replace("/", "~1")
TAINT_LOG = "node.kubernetes.io/out-of-service=nodeshutdown:NoExecute: not reporting for"
RFC3339_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ ")

_certdir = None


def certdir():
    global _certdir
    if _certdir is None and os.environ.get("STANDIN_CERTDIR"):
        _certdir = os.environ["STANDIN_CERTDIR"]  # made once by runner.py for every test process
    if _certdir is None:
        d = tempfile.mkdtemp(prefix="standin-certs-")
        atexit.register(shutil.rmtree, d, True)
        certs.make_certs(d)
        _certdir = d
    return _certdir


class Run:
    """A finished run of the binary."""

    def __init__(self, args, rc, out, err, seconds):
        self.args = args
        self.rc = rc
        self.stdout = out
        self.stderr = err
        self.seconds = seconds
        self.lines = [ln for ln in err.splitlines() if ln.strip()]

    def has(self, sub):
        return any(sub in ln for ln in self.lines)

    def count(self, sub):
        return sum(1 for ln in self.lines if sub in ln)

    def __str__(self):
        return "rc=%s in %.1fs\nargs: %s\n--- stderr ---\n%s--- stdout ---\n%s" % (
            self.rc, self.seconds, " ".join(self.args), self.stderr, self.stdout)


class Case(unittest.TestCase):
    """Base class: self.server(...) to start a stand-in, self.once(...) to run the binary."""

    maxDiff = 4000
    WATCH = False   # NODE_RECOVERY_WATCH for every run of the binary: see the module's docstring
    TOKEN = "sa-token-\u0037kQ2xZ9vH1pRtY8mW3nB6cD4fG0jL5sA"

    def setUp(self):
        if not os.access(BINARY, os.X_OK):
            self.fail("binary not found or not executable: %s" % BINARY)
        self.tmp = tempfile.mkdtemp(prefix="standin-t-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.srv = None
        self.token_path = os.path.join(self.tmp, "token")
        self.write_token(self.TOKEN)
        self.ca = os.path.join(certdir(), "ca.crt")
        self.runs = []

    # ------------------------------------------------------------ setup helpers

    def write_token(self, tok):
        tmp = self.token_path + ".new"
        with open(tmp, "w") as f:
            f.write(tok + "\n")
        os.replace(tmp, self.token_path)

    def server(self, nodes=(), **kw):
        kw.setdefault("token", self.TOKEN)
        s = StandIn(certdir(), nodes=nodes, **kw).start()
        self.addCleanup(s.stop)
        self.srv = s
        self.listed = {n["metadata"]["name"]: s.node(n["metadata"]["name"]) for n in nodes}
        return s

    def reviews_refused(self, status=404):
        """Answer the permission check's access reviews with status (404: an API server without
        them; 403: a user who may not ask), so the pass itself meets a missing permission."""
        reason = {403: "Forbidden", 404: "NotFound"}.get(status, "InternalError")
        self.srv.on(Reply(status, status_body(status, reason, "the server could not find the requested resource"
                                              if status == 404 else "selfsubjectaccessreviews.authorization.k8s.io is forbidden")),
                    times=None, path=SSAR_PATH)

    def env(self, extra=None):
        e = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": self.tmp, "LANG": "C",
             "TZ": "UTC", "NODE_RECOVERY_WATCH": "true" if self.WATCH else "false"}
        if extra:
            for k, v in extra.items():
                if v is None:
                    e.pop(k, None)
                else:
                    e[k] = v
        return e

    def args(self, mode="once", taint_after=60, prune_after=None, self_node="self",
             page_size=None, server=True, extra=()):
        a = [BINARY, mode]
        if server:
            # self.url: a proxy in front of the stand-in (trickle.py), when a test sets one
            url = getattr(self, "url", None) or self.srv.url
            a += ["--server", url, "--ca-file", self.ca, "--token-file", self.token_path]
        if taint_after is not None:
            a += ["--taint-after", str(taint_after)]
        if prune_after is not None:
            a += ["--prune-after", str(prune_after)]
        if self_node is not None:
            a += ["--self-node", self_node]
        if page_size is not None:
            a += ["--page-size", str(page_size)]
        return a + list(extra)

    def once(self, extra=(), env=None, timeout=60, argv=None, **kw):
        """Run `BINARY once` against self.srv; kw go to args()."""
        argv = argv or self.args("once", extra=extra, **kw)
        t0 = time.monotonic()
        try:
            p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                               env=self.env(env), timeout=timeout)
        except subprocess.TimeoutExpired as e:
            self.fail("binary did not finish within %ss: %s\nstderr so far:\n%s" % (
                timeout, " ".join(argv), (e.stderr or b"").decode("utf-8", "replace")))
        r = Run(argv, p.returncode, p.stdout.decode("utf-8", "replace"),
                p.stderr.decode("utf-8", "replace"), time.monotonic() - t0)
        self.runs.append(r)
        return r

    def start_run(self, extra=(), env=None, **kw):
        """Start `BINARY run` in the background; stderr goes to a file. Returns (Popen, errpath)."""
        return self.start("run", extra=extra, env=env, **kw)

    def start(self, mode, extra=(), env=None, **kw):
        """Start `BINARY MODE` in the background; stderr goes to a file. Returns (Popen, errpath)."""
        argv = self.args(mode, extra=extra, **kw)
        errp = os.path.join(self.tmp, "%s-%d.err" % (mode, len(self.runs)))
        ef = open(errp, "wb")
        self.addCleanup(ef.close)
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=ef, stderr=ef, env=self.env(env))

        def _kill():
            if p.poll() is None:
                p.kill()
                p.wait(timeout=10)
        self.addCleanup(_kill)
        return p, errp

    def stop_run(self, p, errp, sig=signal.SIGTERM, timeout=15):
        p.send_signal(sig)
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=10)
            rc = None
        with open(errp, "rb") as f:
            err = f.read().decode("utf-8", "replace")
        r = Run(p.args, rc, "", err, 0)
        self.runs.append(r)
        return r

    # ------------------------------------------------------------ assertions

    def ctx(self, run=None):
        """Text appended to a failing assertion: the run's output and the server's requests."""
        run = run or (self.runs[-1] if self.runs else None)
        s = "\n" + (str(run) if run else "(binary not run)")
        if self.srv:
            s += "--- requests ---\n" + "\n".join(
                "%s %s -> %s %s" % (r.method, r.target, r.status, r.body[:300].decode("utf-8", "replace"))
                for r in self.srv.reqs(reviews=True))
            ev = self.srv.events[-10:]
            if ev:
                s += "\n--- server events ---\n" + "\n".join(t for _, t in ev)
        return s

    def assertRc(self, run, rc):
        if isinstance(rc, (tuple, list)):
            self.assertIn(run.rc, rc, "exit status %s, wanted one of %s%s" % (run.rc, rc, self.ctx(run)))
        else:
            self.assertEqual(run.rc, rc, "exit status %s, wanted %s%s" % (run.rc, rc, self.ctx(run)))

    def assertLog(self, run, sub):
        self.assertTrue(run.has(sub), "no log line contains %r%s" % (sub, self.ctx(run)))

    def assertNoLog(self, run, sub):
        self.assertFalse(run.has(sub), "a log line contains %r%s" % (sub, self.ctx(run)))

    def oos_taints(self, name):
        n = self.srv.node(name)
        return [t for t in (n["spec"].get("taints") or []) if t.get("key") == OOS]

    def assertTainted(self, name, run=None, annotation=ANN, since=None):
        n = self.srv.node(name)
        self.assertIsNotNone(n, "node %s is gone%s" % (name, self.ctx(run)))
        oos = self.oos_taints(name)
        self.assertEqual(len(oos), 1, "node %s: out-of-service taints %r%s" % (name, oos, self.ctx(run)))
        t = oos[0]
        self.assertEqual((t.get("value"), t.get("effect")), ("nodeshutdown", "NoExecute"),
                         "taint %r%s" % (t, self.ctx(run)))
        ann = (n["metadata"].get("annotations") or {}).get(annotation)
        self.assertIsNotNone(ann, "node %s lacks annotation %s%s" % (name, annotation, self.ctx(run)))
        self.assertRegex(ann, RFC3339_UTC, "annotation value is not RFC3339 UTC")
        when = datetime.datetime.strptime(ann[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)
        # now by the server's clock, which is what noderecover goes by
        now = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=self.srv.clock_offset)
        skew = abs((now - when).total_seconds())
        self.assertLess(skew, 120, "annotation %s is not about the server's now" % ann)
        patches = [r for r in self.srv.reqs("PATCH", node=name) if r.status == 200]
        self.assertEqual(len(patches), 1, "node %s: %d successful PATCHes%s" % (name, len(patches), self.ctx(run)))
        self.assertPatchShape(patches[0])
        if run is not None:
            self.assertLog(run, "Tainted %s %s" % (name, TAINT_LOG))
            if since is not None:
                m = re.search(r"Tainted %s \S+: not reporting for (\d+)s" % re.escape(name), run.stderr)
                self.assertTrue(m, self.ctx(run))
                self.assertLessEqual(abs(int(m.group(1)) - since), 10,
                                     "logged %ss, node Unknown for about %ss" % (m.group(1), since))

    def assertPatchShape(self, req, rv=None):
        ct = (req.header("Content-Type") or "").split(";")[0].strip()
        self.assertEqual(ct, "application/json-patch+json", "PATCH content type")
        ops = req.json()
        self.assertIsInstance(ops, list)
        want_rv = rv or self.listed_rv(req.node_name)
        self.assertEqual(ops[0], {"op": "test", "path": "/metadata/resourceVersion", "value": want_rv},
                         "first op of the patch must test the listed resourceVersion: %r" % ops)

    def listed_rv(self, name):
        n = getattr(self, "listed", {}).get(name)
        return n["metadata"]["resourceVersion"] if n else None

    def assertUntouched(self, name, run=None):
        """No PATCH or DELETE reached the server for this node, and it is as it was."""
        acts = [r for r in self.srv.reqs(node=name) if r.method in ("PATCH", "DELETE", "PUT", "POST")]
        self.assertEqual(acts, [], "node %s was acted on%s" % (name, self.ctx(run)))
        before = self.listed.get(name)
        if before is not None:
            self.assertEqual(self.srv.node(name), before, "node %s changed" % name)

    def assertNoActions(self, run=None):
        acts = self.srv.mutating()
        self.assertEqual(acts, [], "the server received changes%s" % self.ctx(run))

    def assertDeleted(self, name, run=None, since=None):
        self.assertIsNone(self.srv.node(name), "node %s still exists%s" % (name, self.ctx(run)))
        dels = self.srv.reqs("DELETE", node=name)
        self.assertEqual(len(dels), 1, "node %s: %d DELETEs%s" % (name, len(dels), self.ctx(run)))
        before = self.listed[name]["metadata"]
        self.assertEqual(dels[0].json(), {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {
            "uid": before["uid"], "resourceVersion": before["resourceVersion"]}}, "DELETE body")
        self.assertEqual(self.srv.reqs("PATCH", node=name), [], "node %s was patched as well as deleted%s" % (
            name, self.ctx(run)))
        if run is not None:
            self.assertLog(run, "Deleted %s: not reporting for" % name)
            if since is not None:
                m = re.search(r"Deleted %s: not reporting for (\d+)s" % re.escape(name), run.stderr)
                self.assertTrue(m, self.ctx(run))
                self.assertLessEqual(abs(int(m.group(1)) - since), 10)

    def assertNotDeleted(self, name, run=None):
        self.assertIsNotNone(self.srv.node(name), "node %s was deleted%s" % (name, self.ctx(run)))
        self.assertEqual(self.srv.reqs("DELETE", node=name), [], "DELETE sent for %s%s" % (name, self.ctx(run)))

    def assertLogShape(self, run):
        """Every stderr line carries the UTC timestamp prefix."""
        for ln in run.lines:
            self.assertRegex(ln, STAMP, "log line without a UTC timestamp prefix%s" % self.ctx(run))


def uk(name, since=120, **kw):
    """A node whose Ready has been Unknown for `since` seconds."""
    return fixtures.node(name, ready="Unknown", since=since, **kw)


def ready(name, **kw):
    return fixtures.node(name, ready="True", **kw)


def healthy(n, prefix="healthy"):
    """n Ready agents: enough of them keep a test's Unknown nodes under the storm guard's 50%."""
    return [ready("%s-%d" % (prefix, i)) for i in range(n)]


def oos_taint(**over):
    t = dict(fixtures.OOS_TAINT)
    t.update(over)
    return t


def our_taint():
    t = dict(fixtures.OOS_TAINT)
    t["timeAdded"] = fixtures.rfc3339(300)
    return t


def dumps(o):
    return json.dumps(o, indent=1, sort_keys=True)
