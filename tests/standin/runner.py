"""Runs the stand-in tests, each test in its own process, a few at a time.

    python3 runner.py [-j N] [-k SUBSTRING]... [MODULE...]

The TLS material is made once and shared read-only (STANDIN_CERTDIR); each test has its own
server, port and temp dir. Prints one line per test as it ends (ok / FAIL / ERROR), the
failures in full, and last `standin: N passed, N failed, N skipped`. Exit status 0 only when nothing
failed and something ran. A test still running after TEST_TIMEOUT seconds is killed and
counted as an error.
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TEST_TIMEOUT = 170
SLOW_FIRST = ("slow", "fault", "run", "auth")


class _Result(unittest.TestResult):
    def __init__(self):
        super().__init__()
        self.outcomes = []

    def _rec(self, test, what, detail=""):
        self.outcomes.append({"test": test.id(), "what": what, "detail": detail})

    def addSuccess(self, test):
        self._rec(test, "ok")

    def addFailure(self, test, err):
        self._rec(test, "FAIL", self._exc_info_to_string(err, test))

    def addError(self, test, err):
        self._rec(test, "ERROR", self._exc_info_to_string(err, test))

    def addSubTest(self, test, subtest, err):
        if err is not None:
            what = "FAIL" if issubclass(err[0], test.failureException) else "ERROR"
            self._rec(subtest, what, self._exc_info_to_string(err, test))

    def addSkip(self, test, reason):
        self._rec(test, "skip", reason)

    def addExpectedFailure(self, test, err):
        self._rec(test, "ok")

    def addUnexpectedSuccess(self, test):
        self._rec(test, "FAIL", "unexpected success")


def worker(test_id):
    sys.path.insert(0, HERE)
    suite = unittest.TestLoader().loadTestsFromName(test_id)
    res = _Result()
    suite.run(res)
    outs = res.outcomes
    bad = [o for o in outs if o["what"] in ("FAIL", "ERROR")]
    # one verdict per test: its subtests' failures fold into it
    if bad:
        verdict = {"test": test_id, "what": bad[0]["what"], "detail": "\n".join(o["detail"] for o in bad)}
    elif outs:
        verdict = {"test": test_id, "what": outs[-1]["what"], "detail": outs[-1]["detail"]}
    else:
        verdict = {"test": test_id, "what": "ERROR", "detail": "no result"}
    sys.stdout.write("\n@@RESULT@@" + json.dumps(verdict) + "\n")
    sys.stdout.flush()


def test_ids(mods, patterns):
    sys.path.insert(0, HERE)
    ids = []

    def walk(s):
        for t in s:
            if isinstance(t, unittest.TestSuite):
                walk(t)
            else:
                ids.append(t.id())
    for m in mods:
        walk(unittest.TestLoader().loadTestsFromName(m))
    if patterns:
        ids = [i for i in ids if any(p in i for p in patterns)]
    return ids


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-j", type=int, default=int(os.environ.get("STANDIN_JOBS", "6")))
    ap.add_argument("-k", action="append", default=[])
    ap.add_argument("--worker")
    ap.add_argument("modules", nargs="*")
    a = ap.parse_args()
    if a.worker:
        worker(a.worker)
        return 0
    mods = a.modules or sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(HERE, "test_*.py")))
    mods = [os.path.basename(m)[:-3] if m.endswith(".py") else m for m in mods]
    ids = test_ids(mods, a.k)
    ids.sort(key=lambda i: (0 if any(w in i.split(".")[0] for w in SLOW_FIRST) else 1, i))
    import certs
    cdir = tempfile.mkdtemp(prefix="standin-certs-")
    try:
        certs.make_certs(cdir)
        env = dict(os.environ, STANDIN_CERTDIR=cdir)
        outcomes = run_all(ids, a.j, env)
    finally:
        shutil.rmtree(cdir, True)
    bad = [o for o in outcomes if o["what"] in ("FAIL", "ERROR")]
    for o in bad:
        print("\n" + "=" * 70 + "\n%s %s\n" % (o["what"], o["test"]) + "-" * 70 + "\n" + o["detail"])
    passed = sum(1 for o in outcomes if o["what"] == "ok")
    skipped = sum(1 for o in outcomes if o["what"] == "skip")
    print()
    print("standin: %d passed, %d failed, %d skipped" % (passed, len(bad), skipped))
    return 1 if bad or passed == 0 else 0


def run_all(ids, jobs, env):
    pending = list(ids)
    running = {}
    outcomes = []
    t0 = time.monotonic()
    while pending or running:
        while pending and len(running) < max(1, jobs):
            tid = pending.pop(0)
            out = tempfile.TemporaryFile()
            p = subprocess.Popen([sys.executable, os.path.join(HERE, "runner.py"), "--worker", tid],
                                 cwd=HERE, stdout=out, stderr=subprocess.STDOUT, env=env)
            running[tid] = (p, time.monotonic(), out)
        time.sleep(0.05)
        for tid, (p, st, out) in list(running.items()):
            killed = False
            if p.poll() is None and time.monotonic() - st > TEST_TIMEOUT:
                p.kill()
                killed = True
            if p.poll() is None:
                continue
            out.seek(0)
            text = out.read().decode("utf-8", "replace")
            out.close()
            del running[tid]
            if "@@RESULT@@" in text and not killed:
                o = json.loads(text.rsplit("@@RESULT@@", 1)[1].strip().splitlines()[0])
            else:
                o = {"test": tid, "what": "ERROR",
                     "detail": "test process ended without a result (rc %s%s):\n%s" % (
                         p.returncode, ", killed after %ss" % TEST_TIMEOUT if killed else "", text[-4000:])}
            o["seconds"] = time.monotonic() - st
            print("%-5s %5.1fs %s" % (o["what"], o["seconds"], o["test"]), flush=True)
            outcomes.append(o)
    print("(%d tests in %.1fs)" % (len(ids), time.monotonic() - t0))
    return outcomes


if __name__ == "__main__":
    sys.exit(main())
