#!/usr/bin/env python3
"""noderecover's benchmark driver (standard library only). bench/run.sh calls it.

One run of the stand-in API server (bench/standin) holds every cluster size; for each size the
rows are measured in turn, interleaved run by run so that drift on the machine hits all alike:

  noderecover      `noderecover once` with a threshold nothing reaches (lists, changes nothing)
  noderecover-taint `noderecover once --taint-after 60` (one node in ten gets a PATCH)
  shell            `kubectl get --raw /api/v1/nodes | jq '[... Ready Unknown past 60 s ...]'`
  curl             curl fetching the same pages as noderecover (limit 500 + continue) to /dev/null

CPU (user+sys) and peak RSS come from wait4() in bench/spawn (see there why) for each child; a pipeline sums CPU over its
processes and reports the sum of their peak RSS (and each one's). Bytes received are the bytes
the server wrote on the client's TCP connections (TLS records included), from its counters.

Writes into --out: results.tsv (every run), summary.tsv (medians), report.md (tables for
BENCHMARKS.md), results.png (gnuplot), and the profile, heap and size files it mentions.
"""
import argparse
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
PAGE = 500  # noderecover's default --page-size
AFTER = 60  # the threshold of the rows that act (the Unknown nodes have been Unknown 1 h)

JQ_FILTER = ('[.items[] | select(any(.status.conditions[]?; .type == "Ready" and .status == "Unknown"'
             ' and (now - (.lastTransitionTime | fromdateiso8601)) >= $after)) | .metadata.name]')


def say(*a):
    print("bench:", *a, file=sys.stderr, flush=True)


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


class Server:
    def __init__(self, binary, certs, token_file, ns, port, control, log):
        self.ns, self.port, self.control = ns, port, control
        self.proc = subprocess.Popen(
            [binary, "-certs", certs, "-token-file", token_file, "-ns", ",".join(map(str, ns)),
             "-port", str(port), "-control", str(control)],
            stdout=log, stderr=log)
        deadline = time.time() + 300
        while True:
            try:
                self.stats()
                return
            except OSError:
                if self.proc.poll() is not None or time.time() > deadline:
                    raise SystemExit("bench: the stand-in server did not start; see its log")
                time.sleep(0.3)

    def get(self, path):
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (self.control, path), timeout=30) as r:
            return r.read().decode()

    def stats(self):
        out = {}
        for line in self.get("/stats").splitlines():
            d = {}
            for m in re.finditer(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)', line):
                v = m.group(2)
                d[m.group(1)] = json.loads(v) if v.startswith('"') else int(v)
            out[d["n"]] = d
        return out

    def url(self, n):
        return "https://127.0.0.1:%d" % (self.port + self.ns.index(n))

    def page_urls(self, n, limit):
        return self.get("/urls?n=%d&limit=%d" % (n, limit)).split()

    def stop(self):
        try:
            self.get("/quit")
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


SPAWN = None  # bench/spawn.c, built by run.sh


def measure(cmds, stdout_path, stderr_path):
    """Runs cmds as a pipeline, each under bench/spawn (which reports the child's own rusage).
    Returns (exit codes, per-process (cpu s, maxrss KiB), wall s)."""
    errf = open(stderr_path, "wb")
    outf = open(stdout_path, "wb")
    procs = []
    resfiles = []
    t0 = time.monotonic()
    prev = None
    for k, c in enumerate(cmds):
        last = k == len(cmds) - 1
        rf = "%s.rusage%d" % (stderr_path, k)
        resfiles.append(rf)
        p = subprocess.Popen([SPAWN, rf] + c, stdin=prev.stdout if prev else subprocess.DEVNULL,
                             stdout=outf if last else subprocess.PIPE, stderr=errf)
        if prev:
            prev.stdout.close()
        procs.append(p)
        prev = p
    for p in procs:
        p.wait()
    wall = time.monotonic() - t0
    errf.close()
    outf.close()
    codes, res = [], []
    for p, rf in zip(procs, resfiles):
        try:
            u, s_, rss, code = open(rf).read().split()
            res.append((float(u) + float(s_), int(rss), float(u), float(s_)))
            codes.append(int(code))
        except (OSError, ValueError):
            res.append((float("nan"), 0, float("nan"), float("nan")))
            codes.append(p.returncode if p.returncode else 127)
    return codes, res, wall


def pick_kubectl():
    k = os.environ.get("KUBECTL") or shutil.which("kubectl")
    if not k:
        raise SystemExit("bench: kubectl not found")
    try:
        v = subprocess.run([k, "version", "--client"], capture_output=True, text=True, timeout=60).stdout
    except Exception:
        v = ""
    if "dispatcher" in v:
        # Google Cloud SDK's kubectl is a dispatcher that execs kubectl.1.NN: use the newest of
        # those directly, so the row measures kubectl and not the dispatcher's own start-up.
        d = os.path.dirname(os.path.realpath(k))
        cands = sorted((f for f in os.listdir(d) if re.fullmatch(r"kubectl\.1\.\d+", f)),
                       key=lambda f: int(f.split(".")[2]))
        if cands:
            k = os.path.join(d, cands[-1])
    return k


def tool_version(cmd):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        return (r.stdout + r.stderr).strip().splitlines()[0]
    except Exception as e:
        return "? (%s)" % e


def machine():
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    flags = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                fl = line.split()
                flags = " ".join(x for x in ("aes", "pclmulqdq", "avx2", "sha_ni") if x in fl)
                break
    mem = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                mem = int(line.split()[1]) // 1024
    osr = "?"
    try:
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    osr = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return {"cpu": cpu, "flags": flags, "cores": os.cpu_count(), "mem_mib": mem, "os": osr,
            "kernel": platform.release()}


def make_certs(d):
    def ossl(*a):
        sh(["openssl"] + list(a), cwd=d, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ossl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "ca.key")
    ossl("req", "-x509", "-new", "-key", "ca.key", "-sha256", "-days", "2", "-subj",
         "/CN=k3s-server-ca@1700000000", "-out", "ca.pem",
         "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature")
    ossl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "server.key")
    with open(os.path.join(d, "server.ext"), "w") as f:
        f.write("basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
                "extendedKeyUsage=serverAuth\nsubjectAltName=DNS:localhost,DNS:kubernetes,IP:127.0.0.1\n")
    ossl("req", "-new", "-key", "server.key", "-subj", "/O=k3s/CN=k3s", "-out", "server.csr")
    ossl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
         "-days", "2", "-sha256", "-extfile", "server.ext", "-out", "server.crt")
    with open(os.path.join(d, "tok"), "w") as f:
        f.write(os.urandom(24).hex() + "\n")


def kubeconfig(path, server, ca, tok):
    with open(path, "w") as f:
        f.write("""apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority: %s
    server: %s
  name: bench
contexts:
- context:
    cluster: bench
    user: bench
  name: bench
current-context: bench
users:
- name: bench
  user:
    tokenFile: %s
""" % (ca, server, tok))


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def fmt_bytes(b):
    if b >= 1 << 20:
        return "%.1f MiB" % (b / 1048576)
    if b >= 1 << 10:
        return "%.0f KiB" % (b / 1024)
    return "%d B" % b


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--standin", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--ns", default="100,1000,5000,20000")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--runs-big", type=int, default=3, help="runs at the largest N")
    ap.add_argument("--port", type=int, default=26443)
    ap.add_argument("--control", type=int, default=26440)
    ap.add_argument("--syms", help="unstripped build of the same code (profile, size)")
    ap.add_argument("--glibc", help="glibc build of the same code (massif heap profile)")
    ap.add_argument("--map", help="link map of the --syms build")
    ap.add_argument("--no-profile", action="store_true")
    ap.add_argument("--spawn", required=True, help="bench/spawn.c built static")
    a = ap.parse_args()

    global SPAWN
    SPAWN = os.path.abspath(a.spawn)
    ns = [int(x) for x in a.ns.split(",")]
    out = os.path.abspath(a.out)
    os.makedirs(out, exist_ok=True)
    certs = os.path.join(out, "certs")
    os.makedirs(certs, exist_ok=True)
    make_certs(certs)
    ca, tok = os.path.join(certs, "ca.pem"), os.path.join(certs, "tok")
    token = open(tok).read().strip()
    binary = os.path.abspath(a.binary)
    kubectl = pick_kubectl()
    t_start = time.monotonic()

    info = {"machine": machine(), "binary": binary, "binary_bytes": os.path.getsize(binary),
            "versions": {
                "noderecover": tool_version([binary, "version"]),
                "kubectl": tool_version([kubectl, "version", "--client"]) + " (" + kubectl + ")",
                "jq": tool_version(["jq", "--version"]),
                "curl": tool_version(["curl", "--version"]),
            }, "ns": ns, "runs": a.runs, "runs_big": a.runs_big}
    say("machine:", info["machine"])
    say("versions:", info["versions"])

    log = open(os.path.join(out, "standin.log"), "wb")
    t0 = time.monotonic()
    srv = Server(a.standin, certs, tok, ns, a.port, a.control, log)
    say("stand-in server ready in %.1f s (%s)" % (time.monotonic() - t0, ", ".join(map(str, ns))))
    rows = []  # dicts, one per measured run
    problems = []
    try:
        for n in ns:
            url = srv.url(n)
            kc = os.path.join(out, "kubeconfig-%d" % n)
            kubeconfig(kc, url, ca, tok)
            pages = srv.page_urls(n, PAGE)
            curl_cmd = ["curl", "-sS", "--fail", "--http1.1", "--cacert", ca,
                        "-H", "Authorization: Bearer " + token]
            for u in pages:
                curl_cmd += ["-o", "/dev/null", u]
            nr = [binary, "once", "--server", url, "--ca-file", ca, "--token-file", tok,
                  "--self-node", "none"]
            tools = [
                ("noderecover", [nr + ["--taint-after", "999999"]]),
                ("noderecover-taint", [nr + ["--taint-after", str(AFTER)]]),
                ("shell", [[kubectl, "--kubeconfig", kc, "get", "--raw", "/api/v1/nodes"],
                           ["jq", "-c", "--argjson", "after", str(AFTER), JQ_FILTER]]),
                ("curl", [curl_cmd]),
            ]
            runs = a.runs_big if n == max(ns) and len(ns) > 1 else a.runs
            unknown = sum(1 for i in range(n) if i % 10 == 9)
            for r in range(runs + 1):  # run 0 warms caches and is not counted
                for name, cmds in tools:
                    before = srv.stats()[n]
                    stem = os.path.join(out, "last-%s-%d" % (name, n))
                    codes, procs, wall = measure(cmds, stem + ".out", stem + ".err")
                    after = srv.stats()[n]
                    d = {k: after[k] - before[k] for k in
                         ("written", "read", "conns", "lists", "list_bytes", "gzipped", "patches",
                          "patch_bad", "other", "server_cpu_us")}
                    row = {"n": n, "tool": name, "run": r, "codes": codes,
                           "cpu": sum(p[0] for p in procs), "wall": wall,
                           "user": sum(p[2] for p in procs), "sys": sum(p[3] for p in procs),
                           "rss_kib": sum(p[1] for p in procs), "rss_max_kib": max(p[1] for p in procs),
                           "procs": [(p[0], p[1]) for p in procs], **d}
                    # Is the run what it claims to be?
                    bad = []
                    if any(codes):
                        bad.append("exit status %s" % codes)
                    if name.startswith("noderecover") or name == "curl":
                        if d["lists"] != len(pages):
                            bad.append("%d list requests, expected %d" % (d["lists"], len(pages)))
                    if name == "noderecover" and d["patches"] + d["patch_bad"]:
                        bad.append("%d patches sent, expected none" % (d["patches"] + d["patch_bad"]))
                    if name == "noderecover-taint" and (d["patches"] != unknown or d["patch_bad"]):
                        bad.append("%d patches accepted and %d refused, expected %d accepted"
                                   % (d["patches"], d["patch_bad"], unknown))
                    if name == "shell":
                        try:
                            got = len(json.load(open(stem + ".out")))
                        except Exception:
                            got = -1
                        if got != unknown:
                            bad.append("jq selected %d nodes, expected %d" % (got, unknown))
                    if d["other"]:
                        bad.append("%d other requests answered with an error" % d["other"])
                    if bad:
                        err = open(stem + ".err", errors="replace").read().strip().splitlines()
                        msg = "N=%d %s run %d: %s (last line of stderr: %s)" % (
                            n, name, r, "; ".join(bad), err[-1] if err else "")
                        problems.append(msg)
                        say("PROBLEM", msg)
                    row["ok"] = not bad
                    rows.append(row)
                say("N=%d run %d/%d done (%.0f s so far)" % (n, r, runs, time.monotonic() - t_start))
        tls_seen = {n: s["tls"] for n, s in srv.stats().items()}

        extra = {}
        if not a.no_profile:
            extra = profiles(a, srv, ns, out, ca, tok, token, problems)
        extra["watch"] = watch_bench(a, srv, ns, out, ca, tok, binary, problems)
    finally:
        srv.stop()
        log.close()

    with open(os.path.join(out, "results.tsv"), "w") as f:
        f.write("n\ttool\trun\tok\tcpu_s\tuser_s\tsys_s\twall_s\trss_kib\trss_max_kib\tbytes_received\tbytes_sent\t"
                "requests\tpatches\tgzipped\tprocs\n")
        for r in rows:
            f.write("%d\t%s\t%d\t%d\t%.4f\t%.4f\t%.4f\t%.4f\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n" % (
                r["n"], r["tool"], r["run"], r["ok"], r["cpu"], r["user"], r["sys"], r["wall"], r["rss_kib"], r["rss_max_kib"],
                r["written"], r["read"], r["lists"], r["patches"], r["gzipped"],
                ";".join("%.4f/%d" % p for p in r["procs"])))

    summ = {}
    for n in ns:
        for tool in ("noderecover", "noderecover-taint", "shell", "curl"):
            rs = [r for r in rows if r["n"] == n and r["tool"] == tool and r["run"] > 0]
            if not rs:
                continue
            summ[(n, tool)] = {
                "runs": len(rs), "ok": all(r["ok"] for r in rs),
                "cpu": med([r["cpu"] for r in rs]), "wall": med([r["wall"] for r in rs]),
                "user": med([r["user"] for r in rs]), "sys": med([r["sys"] for r in rs]),
                "rss": med([r["rss_kib"] for r in rs]), "rss_max": med([r["rss_max_kib"] for r in rs]),
                "bytes": med([r["written"] for r in rs]), "sent": med([r["read"] for r in rs]),
                "requests": med([r["lists"] + r["patches"] + r["patch_bad"] for r in rs]),
                "conns": med([r["conns"] for r in rs]),
                "patches": med([r["patches"] for r in rs]),
                "server_cpu": med([r["server_cpu_us"] / 1e6 for r in rs]),
                "gzipped": med([r["gzipped"] for r in rs]),
                "list_bytes": med([r["list_bytes"] for r in rs]),
                "proc_cpu": [med([r["procs"][k][0] for r in rs]) for k in range(len(rs[0]["procs"]))],
                "proc_rss": [med([r["procs"][k][1] for r in rs]) for k in range(len(rs[0]["procs"]))],
            }
    with open(os.path.join(out, "summary.tsv"), "w") as f:
        f.write("n\tnoderecover_cpu\tnoderecover_taint_cpu\tshell_cpu\tcurl_cpu\t"
                "noderecover_rss_mib\tnoderecover_taint_rss_mib\tshell_rss_mib\tcurl_rss_mib\t"
                "kubectl_rss_mib\tjq_rss_mib\n")
        for n in ns:
            g = lambda t, k: summ.get((n, t), {}).get(k, float("nan"))
            sh_rss = summ.get((n, "shell"), {}).get("proc_rss", [float("nan")] * 2)
            f.write("%d\t%.4f\t%.4f\t%.4f\t%.4f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\n" % (
                n, g("noderecover", "cpu"), g("noderecover-taint", "cpu"), g("shell", "cpu"), g("curl", "cpu"),
                g("noderecover", "rss") / 1024, g("noderecover-taint", "rss") / 1024, g("shell", "rss") / 1024,
                g("curl", "rss") / 1024, sh_rss[0] / 1024, sh_rss[1] / 1024))

    plot(out, ns)
    report(out, info, ns, summ, problems, tls_seen, extra, time.monotonic() - t_start)
    json.dump({"info": info, "problems": problems,
               "summary": {"%d %s" % k: v for k, v in summ.items()}},
              open(os.path.join(out, "summary.json"), "w"), indent=1)
    say("wrote %s/report.md, results.tsv, summary.tsv, results.png in %.0f s"
        % (out, time.monotonic() - t_start))
    if problems:
        say("%d problem(s); the first: %s" % (len(problems), problems[0]))


def plot(out, ns):
    if not shutil.which("gnuplot"):
        say("gnuplot missing: no plot")
        return
    gp = """
set terminal pngcairo size 1200,520 font "DejaVu Sans,10"
set output '%(out)s/results.png'
set datafile separator "\\t"
set key top left
set logscale xy
set grid xtics ytics mytics
set xrange [70:30000]
set xlabel "nodes in the cluster (N)"
set xtics (%(xt)s)
set style line 1 lc rgb "#7b2cbf" lw 2 pt 7 ps 1.2
set style line 2 lc rgb "#2a9d8f" lw 2 pt 6 ps 1.2 dt 2
set style line 3 lc rgb "#1f77b4" lw 2 pt 5 ps 1.2
set style line 4 lc rgb "#e69f00" lw 2 pt 9 ps 1.4
set style line 5 lc rgb "#d62728" lw 1.5 dt 3
set multiplot layout 1,2 title "one pass over the node list: noderecover vs kubectl | jq vs curl (medians)"
set title "CPU, user + system (s)"
plot '%(out)s/summary.tsv' skip 1 u 1:2 w lp ls 1 title 'noderecover once', \\
     '' skip 1 u 1:3 w lp ls 2 title 'noderecover once, tainting N/10', \\
     '' skip 1 u 1:4 w lp ls 3 title 'kubectl get --raw | jq', \\
     '' skip 1 u 1:5 w lp ls 4 title 'curl, same pages (floor)', \\
     '' skip 1 u 1:($5*1.5) w l ls 5 title 'target: 1.5 x curl'
set title "peak RSS (MiB; kubectl | jq: sum of both)"
set yrange [0.1:*]
plot '%(out)s/summary.tsv' skip 1 u 1:6 w lp ls 1 title 'noderecover once', \\
     '' skip 1 u 1:7 w lp ls 2 title 'noderecover once, tainting N/10', \\
     '' skip 1 u 1:8 w lp ls 3 title 'kubectl get --raw | jq', \\
     '' skip 1 u 1:9 w lp ls 4 title 'curl, same pages', \\
     4 w l ls 5 title 'target: 4 MiB'
unset multiplot
""" % {"out": out, "xt": ", ".join('"%d" %d' % (n, n) for n in ns)}
    with open(os.path.join(out, "results.gp"), "w") as f:
        f.write(gp)
    r = subprocess.run(["gnuplot", os.path.join(out, "results.gp")], capture_output=True, text=True)
    if r.returncode:
        say("gnuplot failed:", r.stderr.strip()[-400:])


def profiles(a, srv, ns, out, ca, tok, token, problems):
    """Heap (massif on a glibc build, address-space peaks of the static binary from strace),
    instruction profile (callgrind), binary size. Each is skipped when its tool is missing."""
    extra = {}
    n_small, n_big = (1000 if 1000 in ns else ns[0]), max(ns)

    def nr_args(bin_, n, after=999999):
        return [bin_, "once", "--server", srv.url(n), "--ca-file", ca, "--token-file", tok,
                "--self-node", "none", "--taint-after", str(after)]

    # 1. The static binary's own memory: every brk/mmap/munmap it makes, under strace.
    if shutil.which("strace"):
        extra["strace"] = {}
        for n in sorted(set([ns[0], n_small, n_big])):
            f = os.path.join(out, "strace-%d.txt" % n)
            subprocess.run(["strace", "-f", "-o", f, "-e", "trace=brk,mmap,munmap,mremap"] + nr_args(a.binary, n),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            extra["strace"][n] = anon_peak(f)
        say("strace address-space peaks:", extra["strace"])

    # 2. Heap profile of the same sources linked with glibc (valgrind cannot see the malloc of
    #    a static musl binary: there is no dynamic loader to preload its replacement into).
    if a.glibc and shutil.which("valgrind"):
        extra["massif"] = {}
        for n in sorted(set([n_small, n_big])):
            for mode, after in (("no change", 999999), ("tainting", AFTER)):
                f = os.path.join(out, "massif-%d-%s.out" % (n, "taint" if after == AFTER else "none"))
                t0 = time.monotonic()
                subprocess.run(["valgrind", "--tool=massif", "--massif-out-file=" + f] + nr_args(a.glibc, n, after),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                extra["massif"]["%d %s" % (n, mode)] = massif_peak(f)
                say("massif N=%d %s: %s (%.0f s)" % (n, mode, extra["massif"]["%d %s" % (n, mode)],
                                                     time.monotonic() - t0))
                txt = subprocess.run(["ms_print", f], capture_output=True, text=True).stdout
                open(f[:-4] + ".txt", "w").write(txt)
        # the same count over the whole run: allocations made, bytes allocated
        extra["memcheck"] = {}
        for n in sorted(set([ns[0], n_small])):
            r = subprocess.run(["valgrind", "--tool=memcheck", "--leak-check=no"] + nr_args(a.glibc, n, AFTER),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            m = re.search(r"total heap usage: ([\d,]+) allocs, ([\d,]+) frees, ([\d,]+) bytes allocated", r.stderr)
            extra["memcheck"][n] = m.group(0) if m else "?"
        say("memcheck:", extra["memcheck"])

    # 3. Where the instructions go: callgrind on the unstripped build, and on curl for the floor.
    if a.syms and shutil.which("valgrind"):
        n = 5000 if 5000 in ns else n_small
        f = os.path.join(out, "callgrind-noderecover-%d.out" % n)
        subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + f] + nr_args(a.syms, n),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ann = subprocess.run(["callgrind_annotate", f], capture_output=True, text=True).stdout
        open(os.path.join(out, "callgrind-noderecover-%d.txt" % n), "w").write(ann)
        annt = subprocess.run(["callgrind_annotate", "--inclusive=yes", f], capture_output=True, text=True).stdout
        open(os.path.join(out, "callgrind-noderecover-%d-inclusive.txt" % n), "w").write(annt)
        fc = os.path.join(out, "callgrind-curl-%d.out" % n)
        cmd = ["curl", "-sS", "--http1.1", "--cacert", ca, "-H", "Authorization: Bearer " + token]
        for u in srv.page_urls(n, PAGE):
            cmd += ["-o", "/dev/null", u]
        subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + fc] + cmd,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        annc = subprocess.run(["callgrind_annotate", fc], capture_output=True, text=True).stdout
        open(os.path.join(out, "callgrind-curl-%d.txt" % n), "w").write(annc)
        incl = [l.rstrip() for l in annt.splitlines() if re.match(r"^\s*[\d,]+ \(", l) and "noderecover-syms]" in l
                and not re.search(r"_start_c|below main|libc_start_main|\?\?\?:0x", l)]
        extra["callgrind"] = {"n": n, "noderecover": callgrind_top(ann, 16), "curl": callgrind_top(annc, 8),
                              "inclusive": incl[:22]}
        say("callgrind totals: noderecover %s, curl %s" % (extra["callgrind"]["noderecover"][0],
                                                          extra["callgrind"]["curl"][0]))

    # 3b. Where the time goes: perf's cpu-clock sampling (a software event, so it works on a
    #     virtual machine where perf cannot count instructions) of the unstripped build at the
    #     largest N, grouped by where each symbol comes from.
    if a.syms and shutil.which("perf") and subprocess.run(
            ["perf", "record", "-e", "cpu-clock", "-o", os.path.join(out, "perf-probe.data"), "true"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
        n = n_big
        f = os.path.join(out, "perf-%d.data" % n)
        subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "20000", "-o", f] + nr_args(a.syms, n),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        rep = subprocess.run(["perf", "report", "-i", f, "--no-children", "--sort", "symbol", "--stdio", "-g", "none"],
                             capture_output=True, text=True).stdout
        open(os.path.join(out, "perf-%d.txt" % n), "w").write(rep)
        objdir = os.path.join(os.path.dirname(a.syms), "obj")

        def defined(paths):
            names = set()
            for pth in paths:
                r = subprocess.run(["nm", "--defined-only", pth], capture_output=True, text=True)
                for line in r.stdout.splitlines():
                    q = line.split()
                    if len(q) == 3:
                        names.add(q[2])
            return names
        own = {}
        if os.path.isdir(objdir):
            for o in sorted(os.listdir(objdir)):
                own[o[:-2] + ".c"] = defined([os.path.join(objdir, o)])
        bear = defined([x for x in (os.path.join(TOP, "build/deps/bearssl/libbearssl.a"),) if os.path.exists(x)])
        groups, top = {}, []
        for line in rep.splitlines():
            m = re.match(r"^\s+([\d.]+)%\s+\[(.)\]\s+(\S+)", line)
            if not m:
                continue
            pct, where, sym = float(m.group(1)), m.group(2), m.group(3)
            base = sym.split(".")[0]
            if where == "k":
                g = "kernel (read, TCP, scheduling)"
            elif any(base in s or sym in s for s in own.values()):
                g = next(c for c, s in own.items() if base in s or sym in s)
                g = "noderecover " + g
            elif base in bear or sym in bear:
                g = "BearSSL (TLS)"
            else:
                g = "musl libc"
            groups[g] = groups.get(g, 0) + pct
            if len(top) < 15:
                top.append("%6.2f%%  %s  (%s)" % (pct, sym, g))
        extra["perf"] = {"n": n, "groups": sorted(groups.items(), key=lambda kv: -kv[1]), "top": top}
        say("perf N=%d:" % n, extra["perf"]["groups"][:4])

    # 4. Size.
    if shutil.which("size"):
        extra["size"] = subprocess.run(["size", a.binary], capture_output=True, text=True).stdout.strip()
        if a.syms:
            extra["size_syms"] = subprocess.run(["size", a.syms], capture_output=True, text=True).stdout.strip()
            nm = subprocess.run(["nm", "--size-sort", "-S", "-r", a.syms], capture_output=True, text=True).stdout
            open(os.path.join(out, "symbols.txt"), "w").write(nm)
            code = [l for l in nm.splitlines() if len(l.split()) >= 4 and l.split()[2] in "tTrRwW"]
            bss = [l for l in nm.splitlines() if len(l.split()) >= 4 and l.split()[2] in "bBdD"
                   and int(l.split()[1], 16) >= 4096]
            extra["symbols"] = code[:20]
            extra["buffers"] = bss
        if a.map and os.path.exists(a.map):
            extra["by_origin"] = map_origins(a.map)
    return extra


def anon_peak(path):
    """Peak of the brk heap and of anonymous mmaps (bytes) over a strace log."""
    brk0 = brk = peak_brk = None
    maps, cur, peak = {}, 0, 0
    for line in open(path, errors="replace"):
        m = re.search(r"brk\((0x[0-9a-f]+|NULL)\)\s+=\s+(0x[0-9a-f]+)", line)
        if m:
            v = int(m.group(2), 16)
            if brk0 is None:
                brk0 = v
            brk = v
            peak_brk = max(peak_brk or 0, brk - brk0)
            continue
        m = re.search(r"mmap\((NULL|0x[0-9a-f]+), (\d+), [^,]+, ([^,]+), -1, 0\)\s+=\s+(0x[0-9a-f]+)", line)
        if m and "MAP_ANONYMOUS" in m.group(3):
            maps[int(m.group(4), 16)] = int(m.group(2))
            cur += int(m.group(2))
            peak = max(peak, cur)
            continue
        m = re.search(r"munmap\((0x[0-9a-f]+), (\d+)\)\s+=\s+0", line)
        if m:
            addr, ln = int(m.group(1), 16), int(m.group(2))
            if addr in maps:
                cur -= min(ln, maps.pop(addr))
    return {"brk_peak": peak_brk or 0, "mmap_peak": peak}


def massif_peak(path):
    best = 0
    heap = extra = 0
    for line in open(path):
        if line.startswith("mem_heap_B="):
            heap = int(line.split("=")[1])
        elif line.startswith("mem_heap_extra_B="):
            extra = int(line.split("=")[1])
            best = max(best, heap + extra)
    peak_useful = 0
    for line in open(path):
        if line.startswith("mem_heap_B="):
            peak_useful = max(peak_useful, int(line.split("=")[1]))
    return {"peak_heap": peak_useful, "peak_heap_with_overhead": best}


def callgrind_top(ann, k):
    lines = ann.splitlines()
    total = next((l for l in lines if "PROGRAM TOTALS" in l), "?")
    top = []
    start = False
    for l in lines:
        if re.match(r"^-+$", l.strip()) and start is False and top == [] and total != "?":
            continue
        if "file:function" in l:
            start = True
            continue
        if start and l.strip() and not l.startswith("-"):
            top.append(l.rstrip())
            if len(top) >= k:
                break
    return [total.strip()] + top


def map_origins(path):
    """Bytes of kept .text/.rodata/.data/.bss input sections in a GNU ld map, by origin."""
    sizes = {}
    members = {}
    in_map = False
    pending = None
    for line in open(path, errors="replace"):
        if line.startswith("Linker script and memory map"):
            in_map = True
            continue
        if not in_map:
            continue
        m = re.match(r"^ (\.(text|rodata|data|bss|tdata|tbss)[^\s]*)\s*$", line)
        if m:
            pending = m.group(2)
            continue
        m = re.match(r"^ (\.(text|rodata|data|bss|tdata|tbss)[^\s]*)?\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\S.*)$", line)
        if m and (m.group(2) or pending):
            kind = m.group(2) or pending
            pending = None
            size = int(m.group(4), 16)
            src = m.group(5).strip()
            if "libbearssl" in src:
                origin = "BearSSL"
            elif "libc.a" in src or "/musl/" in src or "crt1.o" in src or "crti.o" in src or "crtn.o" in src:
                origin = "musl libc"
            elif "libgcc" in src or "crtbegin" in src or "crtend" in src:
                origin = "libgcc"
            else:
                mm = re.search(r"([\w.-]+)\.o\b", os.path.basename(src))
                origin = "noderecover (%s)" % (mm.group(1) if mm else src)
            key = (origin, "text" if kind == "text" else "rodata" if kind == "rodata" else "data+bss")
            sizes[key] = sizes.get(key, 0) + size
            if kind in ("text", "rodata"):
                mm = re.search(r"\(([^)]+)\)$", src)
                member = "%s: %s" % (origin, mm.group(1) if mm else os.path.basename(src))
                members[member] = members.get(member, 0) + size
            continue
        pending = None
    out = {"%s|%s" % k: v for k, v in sizes.items()}
    out["__members__"] = sorted(members.items(), key=lambda kv: -kv[1])[:30]
    return out


WATCH_EVENTS = 100000  # MODIFIED events streamed at each N
WATCH_AFTER = 2        # --taint-after of the Unknown-to-taint run, seconds
WATCH_UNKNOWN = [0, 10, 20, 30, 40]  # nodes turned Unknown by an event, 3 s apart


def knows_watch(binary):
    """Whether the binary knows --watch: `manifests --watch=false` is accepted."""
    r = subprocess.run([binary, "manifests", "--taint-after", "300", "--watch=false"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return r.returncode == 0


def proc_cpu(pid):
    """utime + stime of a live process, seconds."""
    with open("/proc/%d/stat" % pid) as f:
        s = f.read()
    f = s[s.rindex(")") + 2:].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def proc_status(pid, key):
    """A kB figure of /proc/PID/status (VmHWM, VmRSS), in KiB."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return -1


def wait_for(what, cond, timeout):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise RuntimeError("timed out waiting for " + what)
        time.sleep(0.05)


def watch_bench(a, srv, ns, out, ca, tok, binary, problems):
    """`noderecover run` following the stand-in's watch: at each N >= 1000, CPU per 1000 events
    and peak RSS (VmHWM) while WATCH_EVENTS MODIFIED events stream by as fast as it reads them;
    at the smallest such N, the time from a node's Unknown (an event) to its PATCH."""
    sizes = [n for n in ns if n >= 1000] or [max(ns)]
    if not knows_watch(binary):
        say("the binary has no --watch: no watch rows")
        return {"skipped": "the binary has no --watch (it only polls)"}
    res = {"rows": [], "events": WATCH_EVENTS}
    for n in sizes:
        url = srv.url(n)
        srv.get("/watch?n=%d&events=%d&hold=1" % (n, WATCH_EVENTS))
        before = srv.stats()[n]
        err = open(os.path.join(out, "watch-%d.err" % n), "wb")
        p = subprocess.Popen([binary, "run", "--server", url, "--ca-file", ca, "--token-file", tok,
                              "--self-node", "none", "--taint-after", "999999", "--poll", "3600"],
                             stdout=err, stderr=err)
        try:
            wait_for("the watch at N=%d" % n, lambda: srv.stats()[n]["watching"] >= 1 or p.poll() is not None, 120)
            if p.poll() is not None:
                raise RuntimeError("noderecover exited %s before it watched" % p.returncode)
            time.sleep(0.3)
            hwm_list = proc_status(p.pid, "VmHWM")
            c0, t0 = proc_cpu(p.pid), time.monotonic()
            srv.get("/go?n=%d" % n)
            wait_for("%d events at N=%d" % (WATCH_EVENTS, n),
                     lambda: srv.stats()[n]["streamed"] > before["streamed"] or p.poll() is not None, 600)
            # the socket buffers still hold some: until its CPU stops moving
            last = -1
            while True:
                time.sleep(0.3)
                c = proc_cpu(p.pid)
                if c == last:
                    break
                last = c
            c1, t1 = last, time.monotonic()
            hwm = proc_status(p.pid, "VmHWM")
            after = srv.stats()[n]
            alive = p.poll() is None
        except (RuntimeError, OSError) as e:
            problems.append("watch N=%d: %s" % (n, e))
            say("PROBLEM watch N=%d: %s" % (n, e))
            p.kill()
            p.wait()
            err.close()
            continue
        p.terminate()
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        err.close()
        if not alive:
            problems.append("watch N=%d: noderecover exited during the stream" % n)
        row = {"n": n, "cpu": c1 - c0, "wall": t1 - t0, "hwm_kib": hwm, "hwm_list_kib": hwm_list,
               "bytes": after["written"] - before["written"], "events": after["events"] - before["events"],
               "stream_s": after["stream_us"] / 1e6, "ok": alive}
        row["cpu_per_1000"] = row["cpu"] / max(row["events"], 1) * 1000
        row["budget_kib"] = 1024 + n * 128 / 1024
        res["rows"].append(row)
        say("watch N=%d: %d events, %.3f s CPU (%.1f ms per 1000), VmHWM %d KiB (after the list %d KiB; budget %d KiB)" % (
            n, row["events"], row["cpu"], row["cpu_per_1000"] * 1000, hwm, hwm_list, row["budget_kib"]))

    # Unknown to taint: nodes turned Unknown by an event on a whole second, --taint-after WATCH_AFTER.
    n = sizes[0]
    srv.get("/watch?n=%d&unknown=%s" % (n, ",".join(map(str, WATCH_UNKNOWN))))
    err = open(os.path.join(out, "watch-taint-%d.err" % n), "wb")
    p = subprocess.Popen([binary, "run", "--server", srv.url(n), "--ca-file", ca, "--token-file", tok,
                          "--self-node", "none", "--taint-after", str(WATCH_AFTER), "--poll", "3600"],
                         stdout=err, stderr=err)
    lat = {}
    try:
        def patched():
            v = srv.stats()[n]["unknown_patched_us"]
            got = dict(kv.split(":") for kv in v.split(",") if kv)
            lat.update({int(k): int(us) for k, us in got.items()})
            return len(lat) == len(WATCH_UNKNOWN) and all(us >= 0 for us in lat.values())
        wait_for("the Unknown nodes tainted", lambda: patched() or p.poll() is not None, 60 + 3 * len(WATCH_UNKNOWN))
    except RuntimeError as e:
        problems.append("watch, Unknown to taint: %s" % e)
    finally:
        p.terminate()
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        err.close()
    res["taint_n"] = n
    res["taint_after"] = WATCH_AFTER
    res["taint_late_s"] = sorted((us / 1e6 - WATCH_AFTER) for us in lat.values() if us >= 0)
    say("watch: Unknown to taint, past the %d s threshold: %s" % (
        WATCH_AFTER, ", ".join("%.3f s" % x for x in res["taint_late_s"])))
    return res


def watch_section(w):
    """The report's lines for watch_bench's result."""
    if not w:
        return []
    L = ["Following a watch (`noderecover run`, the stand-in's watch):", ""]
    if w.get("skipped"):
        return L + ["- not measured: %s." % w["skipped"], ""]
    L.append("| N | events | CPU s | CPU per 1000 events | bytes read | peak RSS (VmHWM) | after the first list | budget 1 MiB + 128 B/node |")
    L.append("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in w["rows"]:
        L.append("| %d | %d | %.3f | %.1f ms | %s | %.2f MiB | %.2f MiB | %.2f MiB: %s |" % (
            r["n"], r["events"], r["cpu"], r["cpu_per_1000"] * 1000, fmt_bytes(r["bytes"]), r["hwm_kib"] / 1024,
            r["hwm_list_kib"] / 1024, r["budget_kib"] / 1024, "met" if r["hwm_kib"] <= r["budget_kib"] else "MISSED"))
    L.append("")
    late = w.get("taint_late_s") or []
    if late:
        L.append("- Unknown to taint at N=%d (`--taint-after %d`, %d nodes turned Unknown by an event on a whole second): "
                 "the PATCH arrived %s after the threshold (worst %.3f s; goal within 1 s) -> %s" % (
                     w["taint_n"], w["taint_after"], len(late), ", ".join("%.3f s" % x for x in late), max(late),
                     "met" if max(late) <= 1 else "MISSED"))
    else:
        L.append("- Unknown to taint: not measured (see problems)")
    L.append("")
    return L


def report(out, info, ns, summ, problems, tls_seen, extra, elapsed):
    m = info["machine"]
    L = []
    L.append("Machine: %s (%s), %d cores, %d MiB memory; %s, Linux %s." % (
        m["cpu"], m["flags"] or "no AES-NI", m["cores"], m["mem_mib"], m["os"], m["kernel"]))
    L.append("")
    for k, v in info["versions"].items():
        L.append("- %s: `%s`" % (k, v))
    L.append("- binary: `%s`, %d bytes" % (info["binary"], info["binary_bytes"]))
    L.append("- runs per row: %d (N=%d: %d), after one warm-up run; medians. Whole run: %.0f s." % (
        info["runs"], max(ns), info["runs_big"], elapsed))
    L.append("")
    L.append("| N | what | CPU s (user+sys) | wall s | peak RSS | received (wire) | requests / TLS connections | server CPU s |")
    L.append("|---:|---|---:|---:|---:|---:|---:|---:|")
    names = {"noderecover": "noderecover once (no change)", "noderecover-taint": "noderecover once (taints N/10)",
             "shell": "kubectl get --raw \\| jq", "curl": "curl, same pages"}
    for n in ns:
        for t in ("noderecover", "noderecover-taint", "shell", "curl"):
            s = summ.get((n, t))
            if not s:
                continue
            rss = "%.1f MiB" % (s["rss"] / 1024)
            if t == "shell":
                rss += " (kubectl %.0f + jq %.0f)" % (s["proc_rss"][0] / 1024, s["proc_rss"][1] / 1024)
            cpu = "%.3f (%.3f+%.3f)" % (s["cpu"], s["user"], s["sys"])
            if t == "shell":
                cpu = "%.3f (%.3f+%.3f; kubectl %.2f, jq %.2f)" % (
                    s["cpu"], s["user"], s["sys"], s["proc_cpu"][0], s["proc_cpu"][1])
            recv = fmt_bytes(s["bytes"])
            if s["gzipped"]:
                recv += " gzip (%s JSON)" % fmt_bytes(s["list_bytes"])
            label = names[t]
            if t == "noderecover-taint":
                label = "noderecover once, tainting (%d PATCH)" % s["patches"]
            L.append("| %d | %s%s | %s | %.3f | %s | %s | %d / %d | %.3f |" % (
                n, label, "" if s["ok"] else " **(see problems below)**", cpu, s["wall"], rss, recv,
                s["requests"], s["conns"], s["server_cpu"]))
    L.append("")
    L.append("Ratios of medians (noderecover once, no change):")
    L.append("")
    L.append("| N | CPU vs shell | CPU vs curl | CPU vs curl, tainting row | peak RSS vs shell | peak RSS vs curl | wall vs shell |")
    L.append("|---:|---:|---:|---:|---:|---:|---:|")
    def rat(x, y):
        if not (x > 0 and y > 0):
            return "?"
        return "%.2fx" % (x / y) if x >= y else "1/%.0f" % (y / x) if y / x >= 10 else "1/%.1f" % (y / x)
    for n in ns:
        g = lambda t, k: summ.get((n, t), {}).get(k, float("nan"))
        L.append("| %d | %s | %s | %s | %s | %s | %s |" % (
            n, rat(g("noderecover", "cpu"), g("shell", "cpu")), rat(g("noderecover", "cpu"), g("curl", "cpu")),
            rat(g("noderecover-taint", "cpu"), g("curl", "cpu")), rat(g("noderecover", "rss"), g("shell", "rss")),
            rat(g("noderecover", "rss"), g("curl", "rss")), rat(g("noderecover", "wall"), g("shell", "wall"))))
    L.append("")
    L.append("TLS as the server saw it (version, cipher suite, HTTP version | user agent x requests):")
    L.append("")
    for n in ns:
        L.append("- N=%d: %s" % (n, tls_seen.get(n, "?")))
    L.append("")
    # targets
    L.append("Targets:")
    L.append("")
    n5 = 5000 if 5000 in ns else max(ns)
    rss5 = summ.get((n5, "noderecover"), {}).get("rss", float("nan")) / 1024
    rss5t = summ.get((n5, "noderecover-taint"), {}).get("rss", float("nan")) / 1024
    rs = [summ[(n, "noderecover")]["rss"] / 1024 for n in ns if (n, "noderecover") in summ]
    rt = [summ[(n, "noderecover-taint")]["rss"] / 1024 for n in ns if (n, "noderecover-taint") in summ]
    L.append("- Peak RSS at N=%d <= 4 MiB: %.2f MiB (tainting row: %.2f MiB) -> %s" % (
        n5, rss5, rss5t, "met" if max(rss5, rss5t) <= 4 else "MISSED by %.2f MiB" % (max(rss5, rss5t) - 4)))
    L.append("- Flat in N: %s MiB with no change (%s), %s MiB in the tainting row" % (
        " / ".join("%.2f" % x for x in rs), "flat" if max(rs) - min(rs) < 0.25 else "NOT flat",
        " / ".join("%.2f" % x for x in rt)))
    for n in ns:
        c = summ.get((n, "noderecover"), {}).get("cpu", float("nan"))
        f = summ.get((n, "curl"), {}).get("cpu", float("nan"))
        L.append("- CPU <= 1.5x curl at N=%d: %.3f s vs %.3f s = %.2fx -> %s" % (
            n, c, f, c / f, "met" if c / f <= 1.5 else "MISSED (%.2fx over the 1.5x bound)" % (c / f / 1.5)))
    c = summ.get((1000, "noderecover"), {}).get("cpu", float("nan"))
    s = summ.get((1000, "shell"), {}).get("cpu", float("nan"))
    L.append("- CPU at least 10x less than the shell at N=1000: %.0fx less -> %s" % (
        s / c, "met" if s / c >= 10 else "MISSED"))
    L.append("- Binary under 1 MiB, aiming at 240 KiB: %d bytes = %.1f KiB -> %s" % (
        info["binary_bytes"], info["binary_bytes"] / 1024,
        "met (under 240 KiB too)" if info["binary_bytes"] <= 240 * 1024 else
        "under 1 MiB, %.1f KiB over the 240 KiB aim" % (info["binary_bytes"] / 1024 - 240)
        if info["binary_bytes"] < 1 << 20 else "MISSED"))
    L.append("")
    L += watch_section(extra.get("watch"))
    if extra.get("strace"):
        L.append("Memory the static binary asks the kernel for (strace of brk/mmap; peak bytes):")
        L.append("")
        for n, v in sorted(extra["strace"].items()):
            L.append("- N=%d: brk heap %s, anonymous mmap %s" % (n, fmt_bytes(v["brk_peak"]), fmt_bytes(v["mmap_peak"])))
        L.append("")
    if extra.get("massif"):
        L.append("valgrind massif, the same sources linked with glibc:")
        L.append("")
        for k, v in sorted(extra["massif"].items(), key=lambda kv: (int(kv[0].split()[0]), kv[0])):
            L.append("- N=%s: peak heap %d bytes (%d with allocator overhead)" % (
                k, v["peak_heap"], v["peak_heap_with_overhead"]))
        for n, v in sorted(extra.get("memcheck", {}).items()):
            L.append("- memcheck N=%d: %s" % (n, v))
        L.append("")
    if extra.get("callgrind"):
        cg = extra["callgrind"]
        L.append("callgrind, N=%d, `noderecover once` (no change), instructions by function (self):" % cg["n"])
        L.append("")
        L.append("```")
        L.extend(cg["noderecover"])
        L.append("```")
        L.append("")
        L.append("callgrind, N=%d, the same run, instructions including callees:" % cg["n"])
        L.append("")
        L.append("```")
        L.extend(cg.get("inclusive", []))
        L.append("```")
        L.append("")
        L.append("callgrind, N=%d, curl over the same pages:" % cg["n"])
        L.append("")
        L.append("```")
        L.extend(cg["curl"])
        L.append("```")
        L.append("")
    if extra.get("perf"):
        pf = extra["perf"]
        L.append("perf, cpu-clock samples of `noderecover once` (no change) at N=%d, unstripped build, by origin:" % pf["n"])
        L.append("")
        L.append("| where | share of samples |")
        L.append("|---|---:|")
        for g, v in pf["groups"]:
            L.append("| %s | %.1f%% |" % (g, v))
        L.append("")
        L.append("```")
        L.extend(pf["top"])
        L.append("```")
        L.append("")
    if extra.get("size"):
        L.append("Size:")
        L.append("")
        L.append("```")
        L.append(extra["size"])
        if extra.get("size_syms"):
            L.append(extra["size_syms"])
        L.append("```")
        L.append("")
        try:
            t0 = int(extra["size"].splitlines()[1].split()[0])
            t1 = int(extra["size_syms"].splitlines()[1].split()[0])
            if abs(t0 - t1) > max(64, t0 // 200):
                L.append("Note: the unstripped copy (built from the working tree at run time) has %d bytes of text, "
                         "the measured binary %d: the tree changed since that binary was built, so the symbol "
                         "sizes and the callgrind profile describe the tree, not exactly the binary measured." % (t1, t0))
            else:
                L.append("The unstripped copy has the same code as the measured binary (text %d vs %d bytes; "
                         "alignment only)." % (t1, t0))
            L.append("")
        except (KeyError, IndexError, ValueError):
            pass
    if extra.get("by_origin"):
        L.append("| origin | text | rodata | data+bss |")
        L.append("|---|---:|---:|---:|")
        members = extra["by_origin"].pop("__members__", [])
        origins = sorted({k.split("|")[0] for k in extra["by_origin"]},
                         key=lambda o: -sum(v for k, v in extra["by_origin"].items()
                                            if k.startswith(o + "|") and not k.endswith("data+bss")))
        for o in origins:
            g = lambda kind: extra["by_origin"].get("%s|%s" % (o, kind), 0)
            L.append("| %s | %d | %d | %d |" % (o, g("text"), g("rodata"), g("data+bss")))
        L.append("")
        if members:
            L.append("Largest object files (text + rodata kept by the linker):")
            L.append("")
            L.append("```")
            for m, v in members:
                L.append("%7d %s" % (v, m))
            L.append("```")
            L.append("")
    if extra.get("buffers"):
        L.append("Static buffers of 4 KiB or more (bss/data: they take no file space, and RAM only where touched):")
        L.append("")
        L.append("```")
        for s in extra["buffers"]:
            p = s.split()
            L.append("%7d %s %s" % (int(p[1], 16), p[2], p[3]))
        L.append("```")
        L.append("")
    if extra.get("symbols"):
        L.append("Largest code and read-only symbols (`nm --size-sort -S`, unstripped build):")
        L.append("")
        L.append("```")
        for s in extra["symbols"]:
            p = s.split()
            if len(p) >= 4:
                L.append("%7d %s %s" % (int(p[1], 16), p[2], p[3]))
        L.append("```")
        L.append("")
    if problems:
        L.append("Problems seen (runs that did not do what the row claims):")
        L.append("")
        for p in problems[:20]:
            L.append("- " + p.replace("\n", " "))
        L.append("")
    # Paths inside the checkout are said relative to it: the report goes into BENCHMARKS.md,
    # which must not carry the path of the machine that ran it.
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(L).replace(root, "") + "\n")


if __name__ == "__main__":
    main()
