"""The amd64 image run by containerd as k3s runs it: user 65532 from the image, read-only root,
the host's network. Started by tests/image/run.sh, which runs the daemon and passes
CTR (the ctr command line for its socket, namespace k8s.io) and IMAGE (the imported name).
Uses the stand-in API server of tests/standin. Prints "image-container: N passed, N failed".
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "standin"))

import fixtures  # noqa: E402
from harness import Case, ready, uk, certdir  # noqa: E402

CTR = os.environ.get("CTR", "").split()
IMAGE = os.environ.get("IMAGE", "")
IMAGE_UID = 65532


class Container(Case):
    def setUp(self):
        if not CTR or not IMAGE:
            self.fail("CTR and IMAGE must be set (tests/image/run.sh sets them)")
        super().setUp()
        # What the pod would mount: the CA and a token, readable by the image's user.
        self.cfg = tempfile.mkdtemp(prefix="noderecover-image-cfg-")
        self.addCleanup(shutil.rmtree, self.cfg, True)
        os.chmod(self.cfg, 0o755)
        shutil.copy(os.path.join(certdir(), "ca.crt"), os.path.join(self.cfg, "ca.crt"))
        with open(os.path.join(self.cfg, "token"), "w") as f:
            f.write(self.TOKEN + "\n")
        for n in ("ca.crt", "token"):
            os.chmod(os.path.join(self.cfg, n), 0o644)
        self.cid = "nr-%d-%s" % (os.getpid(), self._testMethodName[-20:].replace("_", "-"))

    def ctr_run(self, mode, *extra):
        return CTR + ["run", "--rm", "--read-only", "--net-host", "--snapshotter", "native",
                      "--mount", "type=bind,src=%s,dst=/cfg,options=rbind:ro" % self.cfg,
                      IMAGE, self.cid, "/noderecover", mode, "--server", self.srv.url,
                      "--ca-file", "/cfg/ca.crt", "--token-file", "/cfg/token",
                      "--taint-after", "60", "--self-node", "self"] + list(extra)

    def cluster(self):
        return self.server(fixtures.etcd_servers(3) + [uk("self", since=7200),
                           uk("agent-1", since=120), ready("agent-2")])

    def test_once_taints_a_dead_node(self):
        self.cluster()
        r = self.once(argv=self.ctr_run("once"), timeout=120)
        self.assertRc(r, 0)
        self.assertTainted("agent-1", r, since=120)
        self.assertUntouched("agent-2", r)
        self.assertEqual([q.node_name for q in self.srv.mutating()], ["agent-1"], self.ctx(r))

    def test_runs_as_65532_on_a_read_only_root_and_stops_on_sigterm(self):
        self.cluster()
        errp = os.path.join(self.tmp, "run.err")
        with open(errp, "wb") as ef:
            p = subprocess.Popen(self.ctr_run("run", "--poll", "1"), stdin=subprocess.DEVNULL,
                                 stdout=ef, stderr=ef)
        try:
            pid = self.task_pid(p)
            with open("/proc/%d/status" % pid) as f:
                st = dict(ln.split(":", 1) for ln in f if ":" in ln)
            self.assertEqual(st["Uid"].split(), [str(IMAGE_UID)] * 4, st["Uid"])
            self.assertEqual(st["Gid"].split(), [str(IMAGE_UID)] * 4, st["Gid"])
            with open("/proc/%d/mountinfo" % pid) as f:
                root = [ln.split() for ln in f if ln.split()[4] == "/"]
            self.assertTrue(root and "ro" in root[-1][5].split(","), "root mount: %r" % root)
            deadline = time.monotonic() + 60
            while not self.oos_taints("agent-1") and time.monotonic() < deadline:
                time.sleep(0.2)
            subprocess.run(CTR + ["task", "kill", "--signal", "SIGTERM", self.cid], check=True,
                           capture_output=True, timeout=30)
            rc = p.wait(timeout=30)
        finally:
            if p.poll() is None:
                subprocess.run(CTR + ["task", "kill", "--signal", "SIGKILL", self.cid],
                               capture_output=True, timeout=30)
                p.wait(timeout=30)
        with open(errp, "rb") as f:
            err = f.read().decode("utf-8", "replace")
        self.assertEqual(rc, 0, err)
        self.assertTainted("agent-1")
        self.assertIn("noderecover stopping on a signal", err)

    def task_pid(self, p):
        """The PID (in our namespace) of the container's process, once it is running."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and p.poll() is None:
            out = subprocess.run(CTR + ["task", "ls"], capture_output=True, text=True).stdout
            for ln in out.splitlines():
                f = ln.split()
                if f and f[0] == self.cid and f[-1] == "RUNNING":
                    return int(f[1])
            time.sleep(0.1)
        self.fail("the container %s never ran (exit status %s)" % (self.cid, p.poll()))


if __name__ == "__main__":
    res = unittest.TextTestRunner(verbosity=2).run(unittest.TestLoader().loadTestsFromTestCase(Container))
    bad = len(res.failures) + len(res.errors)
    print("image-container: %d passed, %d failed" % (res.testsRun - bad, bad))
    sys.exit(1 if bad else 0)
