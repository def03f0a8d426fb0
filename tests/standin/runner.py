"""Runs the stand-in tests: each test_*.py module in its own process, a few at a time.

    python3 runner.py [-j N] [-k SUBSTRING]... [MODULE...]

Prints one line per test (ok / FAIL / ERROR / skip), the failures in full, and last
`standin: N passed, N failed`. Exit status 0 only when nothing failed and something ran.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER_TIMEOUT = 170


class _Result(unittest.TextTestResult):
    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.outcomes = []

    def _rec(self, test, what, detail=""):
        self.outcomes.append({"test": test.id(), "what": what, "detail": detail,
                              "seconds": round(time.monotonic() - self._t0, 1)})

    def startTest(self, test):
        self._t0 = time.monotonic()
        super().startTest(test)

    def addSuccess(self, test):
        super().addSuccess(test)
        self._rec(test, "ok")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._rec(test, "FAIL", self._exc_info_to_string(err, test))

    def addError(self, test, err):
        super().addError(test, err)
        self._rec(test, "ERROR", self._exc_info_to_string(err, test))

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._rec(test, "skip", reason)

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._rec(test, "ok")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._rec(test, "FAIL", "unexpected success")


def worker(module, patterns):
    sys.path.insert(0, HERE)
    loader = unittest.TestLoader()
    if patterns:
        loader.testNamePatterns = ["*%s*" % p for p in patterns]
    suite = loader.loadTestsFromName(module)
    with open(os.devnull, "w") as devnull:
        runner = unittest.TextTestRunner(stream=devnull, resultclass=_Result, verbosity=0)
        res = runner.run(suite)
    sys.stdout.write("\n@@RESULT@@" + json.dumps(res.outcomes) + "\n")
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-j", type=int, default=int(os.environ.get("STANDIN_JOBS", "6")))
    ap.add_argument("-k", action="append", default=[])
    ap.add_argument("--worker")
    ap.add_argument("modules", nargs="*")
    a = ap.parse_args()
    if a.worker:
        worker(a.worker, a.k)
        return 0
    mods = a.modules or sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(HERE, "test_*.py")))
    mods = [m[:-3] if m.endswith(".py") else m for m in mods]
    # the slowest modules first, so they overlap the rest
    mods.sort(key=lambda m: (0 if any(w in m for w in ("slow", "fault", "run", "auth")) else 1, m))
    pending = list(mods)
    running = {}
    outcomes = []
    t0 = time.monotonic()
    while pending or running:
        while pending and len(running) < max(1, a.j):
            m = pending.pop(0)
            cmd = [sys.executable, os.path.join(HERE, "runner.py"), "--worker", m]
            for k in a.k:
                cmd += ["-k", k]
            p = subprocess.Popen(cmd, cwd=HERE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            running[m] = (p, time.monotonic())
        time.sleep(0.1)
        for m, (p, st) in list(running.items()):
            if p.poll() is None and time.monotonic() - st > WORKER_TIMEOUT:
                p.kill()
            if p.poll() is None:
                continue
            out = p.stdout.read().decode("utf-8", "replace")
            p.stdout.close()
            del running[m]
            if "@@RESULT@@" in out:
                pre, res = out.rsplit("@@RESULT@@", 1)
                got = json.loads(res.strip().splitlines()[0])
            else:
                got = [{"test": m, "what": "ERROR", "seconds": round(time.monotonic() - st, 1),
                        "detail": "module did not finish (rc %s, limit %ss):\n%s" % (p.returncode, WORKER_TIMEOUT, out[-4000:])}]
            for o in got:
                print("%-5s %5.1fs %s" % (o["what"], o["seconds"], o["test"]), flush=True)
            outcomes.extend(got)
    bad = [o for o in outcomes if o["what"] in ("FAIL", "ERROR")]
    for o in bad:
        print("\n" + "=" * 70 + "\n%s %s\n" % (o["what"], o["test"]) + "-" * 70 + "\n" + o["detail"])
    passed = sum(1 for o in outcomes if o["what"] == "ok")
    skipped = sum(1 for o in outcomes if o["what"] == "skip")
    print("\n(%d modules in %.1fs)" % (len(mods), time.monotonic() - t0))
    if skipped:
        print("(%d skipped)" % skipped)
    print("standin: %d passed, %d failed" % (passed, len(bad)))
    return 1 if bad or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
