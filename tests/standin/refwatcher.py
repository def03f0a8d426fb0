#!/usr/bin/env python3
"""A model of noderecover's contract in Python, only to check the stand-in tests themselves.

    tests/standin/run.sh tests/standin/refwatcher.py

If a test fails against this model, suspect the test (or the model) before the binary.
It is not the product and is never shipped; it follows the README's "What it does, exactly" loosely
(Python's ssl does the TLS and name checks). Read timeout: 30 s, as the binary's.
`run` watches (--watch, NODE_RECOVERY_WATCH, default on) in the simplest way that keeps the
contract: list, then a watch from the list's resourceVersion read line by line in a thread; the
table of nodes re-decided on each event and twice a second; a normal end resumes from the last
resourceVersion; 410, a broken line, a line over 256 KiB, an object that is not a Node or an
unknown event type relist; 429 waits its Retry-After; other failures back off (0.8 s doubling to
30 s, scaled by NODERECOVER_TEST_DEADLINE_SCALE as the 120 s silence limit is); a relist every
--relist seconds (x 0.8-1.0). It has no /metrics and no memory bound of its own.
"""
import base64
import datetime
import http.client
import json
import os
import queue
import random
import re
import signal
import socket
import ssl
import sys
import tempfile
import threading
import time
import urllib.parse

OOS = "node.kubernetes.io/out-of-service"
CP = "node-role.kubernetes.io/control-plane"
ETCD = "node-role.kubernetes.io/etcd"
FLAGS = {"--taint-after": "NODE_RECOVERY_AFTER_SECONDS", "--prune-after": "NODE_RECOVERY_PRUNE_AFTER_SECONDS",
         "--prune-label": "NODE_RECOVERY_PRUNE_LABEL", "--annotation": "NODE_RECOVERY_ANNOTATION",
         "--self-node": "NODE_RECOVERY_SELF_NODE", "--poll": "NODE_RECOVERY_POLL_SECONDS",
         "--kubeconfig": "KUBECONFIG", "--server": None, "--ca-file": None, "--token-file": None,
         "--tls-server-name": None, "--page-size": None, "--max-unknown": "NODE_RECOVERY_MAX_UNKNOWN",
         "--storm-cooldown": "NODE_RECOVERY_STORM_COOLDOWN", "--exclude-label": "NODE_RECOVERY_EXCLUDE_LABEL",
         "--dry-run": "NODE_RECOVERY_DRY_RUN", "--watch": "NODE_RECOVERY_WATCH",
         "--relist": "NODE_RECOVERY_RELIST_SECONDS"}
DEFAULTS = {"--prune-label": "github-runner.exadev.io/removable",
            "--annotation": "github-runner.exadev/out-of-service-applied-at", "--poll": "15",
            "--page-size": "500", "--max-unknown": "50%", "--exclude-label": "github-runner.exadev.io/no-recovery",
            "--watch": "true", "--relist": "600"}
stop = False
storm = {"phase": "off", "since": 0.0}
told = set()  # lines said once while they stand (an opted-out node, a refused delete) already logged
clock = {"skew": 0, "no_date_said": False, "server": None, "mono": 0.0}  # the API server's clock, as last listed
CLOCK_SKEW_MAX = 5
written = {}  # name -> the node as a successful write left it (None: deleted), for the watch's table


class Stop(Exception):
    pass


def log(msg):
    sys.stderr.write(time.strftime("%Y-%m-%dT%H:%M:%SZ ", time.gmtime()) + msg + "\n")
    sys.stderr.flush()


def refuse(msg):
    log(msg)
    sys.exit(2)


def whole(name, v):
    if not re.fullmatch(r"[0-9]{1,9}", v or ""):
        refuse("%s '%s' is not a whole number of seconds" % (name, v))
    return int(v)


def seconds(name, v):
    """Seconds as the binary takes them: bare digits, or whole hours, minutes and seconds in that
    order (1h30m, 5m, 90s), at most ten years."""
    name = "%s (%s)" % (name, FLAGS[name]) if FLAGS.get(name) else name
    m = re.fullmatch(r"([0-9]+)|(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?", v or "")
    if not v or not m:
        refuse("%s '%s' is not a duration" % (name, v))
    if m.group(1) is not None:
        n = int(m.group(1))
    else:
        n = int(m.group(2) or 0) * 3600 + int(m.group(3) or 0) * 60 + int(m.group(4) or 0)
    if n > 315360000:
        refuse("%s '%s' is longer than 87600h, the most it takes" % (name, v))
    return n


class Fail(Exception):
    pass


class Client:
    def __init__(self, s):
        self.s = s
        self.conn = None
        self.date = None    # the Date header of the last answer

    def token(self):
        if not self.s.get("token_file"):
            return self.s.get("token")
        with open(self.s["token_file"]) as f:
            return f.read().strip()

    def connect(self):
        u = urllib.parse.urlsplit(self.s["server"])
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.load_verify_locations(cadata=self.s["ca_pem"])
        if self.s.get("cert"):
            ctx.load_cert_chain(self.s["cert"], self.s["key"])
        name = self.s.get("tls_server_name") or u.hostname
        c = http.client.HTTPSConnection(u.hostname, u.port or 443, context=ctx, timeout=30)
        if self.s.get("tls_server_name"):
            sock = socket.create_connection((u.hostname, u.port), timeout=30)
            c.sock = ctx.wrap_socket(sock, server_hostname=name)
        return c

    def call(self, method, path, body=None, ctype=None):
        reread = False
        for attempt in range(4):
            try:
                if self.conn is None:
                    self.conn = self.connect()
                h = {}
                tok = self.token()
                if tok and not self.s.get("cert"):
                    h["Authorization"] = "Bearer " + tok
                if ctype:
                    h["Content-Type"] = ctype
                self.conn.request(method, path, body=body, headers=h)
                r = self.conn.getresponse()
                data = r.read()
                self.date = r.getheader("Date")
            except ssl.SSLCertVerificationError as e:
                self.conn = None
                raise Fail("TLS verification failed: %s" % e.verify_message)
            except (OSError, http.client.HTTPException, ssl.SSLError) as e:
                self.conn = None
                if isinstance(e, socket.timeout):
                    raise Fail("timed out")
                if attempt < 2:
                    time.sleep(0.2)
                    continue
                raise Fail("connection error: %s" % (e.__class__.__name__,))
            if r.status == 401 and not reread:
                reread = True
                continue
            if r.status in (429, 503) and attempt < 3:
                ra = r.getheader("Retry-After")
                time.sleep(min(int(ra), 10) if ra and ra.isdigit() else 1)
                continue
            if r.status >= 500 and attempt < 2:
                time.sleep(0.2)
                continue
            return r.status, data
        return r.status, data


def node_facts(n):
    md = n.get("metadata") or {}
    ready = None
    for c in (n.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            ready = c
    return md, ready


def server_now():
    """The API server's time: its Date at the last list's start, advanced by the monotonic
    clock (the local clock when it sent none the model can read)."""
    if clock["server"] is None:
        return time.time()
    return clock["server"] + (time.monotonic() - clock["mono"])


def since(c):
    t = datetime.datetime.strptime(c["lastTransitionTime"][:19], "%Y-%m-%dT%H:%M:%S").replace(
        tzinfo=datetime.timezone.utc)
    return int(server_now() - t.timestamp())


def server_time(date):
    """The API server's clock from its Date header (IMF-fixdate only, as the binary reads it),
    or None."""
    if not date or not re.fullmatch(r"[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT", date):
        return None
    try:
        return datetime.datetime.strptime(date, "%a, %d %b %Y %H:%M:%S GMT").replace(
            tzinfo=datetime.timezone.utc).timestamp()
    except ValueError:
        return None


def say_clock(local, date):
    """One line when the local clock and the server's part by more than CLOCK_SKEW_MAX seconds,
    one more each time that changes by as much; one when the server sends no readable Date."""
    if date is None:
        if not clock["no_date_said"]:
            log("The API server's answer has no Date header noderecover can read; it goes by the local clock")
        clock["no_date_said"] = True
        return
    skew = int(local) - int(date)
    if abs(skew - clock["skew"]) <= CLOCK_SKEW_MAX:
        return
    clock["skew"] = skew
    if abs(skew) <= CLOCK_SKEW_MAX:
        log("The local clock agrees with the API server's again (within %ds)" % CLOCK_SKEW_MAX)
    else:
        log("The local clock is %ds %s the API server's; noderecover goes by the server's clock"
            % (abs(skew), "behind" if skew < 0 else "ahead of"))


def esc(k):
    return k.replace("~", "~0").replace("/", "~1")


def one_pass(s, cl, table=None):
    """List (or take the watch's table of nodes) and decide every node: (False when an action
    failed or was held back, seconds until a node seen Unknown crosses a threshold or None)."""
    if table is None:
        nodes, _ = list_nodes(s, cl)
    else:
        nodes = list(table.values())
    return decide(s, cl, nodes)


def list_nodes(s, cl):
    """The paged list: (nodes, the list's resourceVersion)."""
    nodes = []
    restarted = False
    cont = None
    pages = 0
    while True:
        pages += 1
        if pages > 10000:
            raise Fail("too many pages")
        q = "limit=%d" % s["page"] + ("&continue=" + urllib.parse.quote(cont, safe="") if cont else "")
        st, data = cl.call("GET", "/api/v1/nodes?" + q)
        if st == 410 and cont and not restarted:
            restarted = True
            cont = None
            nodes = []
            continue
        if st != 200:
            raise Fail("listing nodes failed: HTTP %d" % st)
        if not cont:
            # thresholds go by the clock that wrote lastTransitionTime: the list's Date
            local = time.time()
            date = server_time(cl.date)
            say_clock(local, date)
            clock["server"], clock["mono"] = (date if date is not None else local), time.monotonic()
        try:
            d = json.loads(data)
            items = d["items"]
            if not isinstance(items, list):
                raise ValueError
        except (ValueError, KeyError, TypeError):
            raise Fail("listing nodes failed: not a node list")
        nodes += items
        if not cont:
            list_rv = (d.get("metadata") or {}).get("resourceVersion")
        was, cont = cont, (d.get("metadata") or {}).get("continue")
        if not cont:
            break
        if cont == was:
            raise Fail("reading the node list: the server gave the same continue token again")
    return nodes, list_rv


def decide(s, cl, nodes):
    ok = True
    due = []
    unknown = sum(1 for n in nodes if (node_facts(n)[1] or {}).get("status") == "Unknown")
    mu = s["max_unknown"]
    limit = -1 if mu == "100%" else int(mu) if not mu.endswith("%") else max(1, int(mu[:-1]) * len(nodes) // 100)
    held = [False]
    if limit >= 0 and unknown > limit:
        if storm["phase"] != "on":
            log("Storm guard engaged: %d of %d nodes are Unknown, more than the limit of %d" % (unknown, len(nodes), limit))
        storm["phase"] = "on"
    else:
        if storm["phase"] == "on":
            storm["phase"], storm["since"] = "cooling", time.monotonic()
            if s["cooldown"] > 0:
                log("Storm guard cooling down: %d of %d nodes are Unknown, within the limit of %d" % (unknown, len(nodes), limit))
        if storm["phase"] == "cooling" and time.monotonic() - storm["since"] >= s["cooldown"]:
            storm["phase"] = "off"
            log("Storm guard lifted: %d of %d nodes are Unknown, within the limit of %d" % (unknown, len(nodes), limit))
    holding = storm["phase"] != "off"

    def hold():
        held[0] = True
        return holding
    telling = set()

    def once(line):
        telling.add(line)
        if line not in told:
            log(line)

    def excluded(name, labels, verb):
        if labels.get(s["exclude"]) != "true":
            return False
        once("Not %s %s: it carries %s=true, so it is left as it is" % (verb, name, s["exclude"]))
        return True
    voters = 0
    for n in nodes:
        md, r = node_facts(n)
        if ETCD in (md.get("labels") or {}) and r and r.get("status") == "True":
            voters += 1
    def handle(n):
        nonlocal ok
        md, r = node_facts(n)
        name = md.get("name")
        if not re.fullmatch(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?", name or ""):
            log("Not acting on a node named %r: not a valid node name" % name)
            ok = False
            return
        if name == s["self"] or r is None:
            return
        labels = md.get("labels") or {}
        ann = md.get("annotations") or {}
        taints = (n.get("spec") or {}).get("taints") or []
        rv = md.get("resourceVersion")
        test = {"op": "test", "path": "/metadata/resourceVersion", "value": rv}
        oos = [i for i, t in enumerate(taints) if t.get("key") == OOS]
        if r.get("status") == "True":
            if oos and s["ann"] in ann:
                ops = [test, {"op": "remove", "path": "/spec/taints/%d" % oos[0]},
                       {"op": "remove", "path": "/metadata/annotations/" + esc(s["ann"])}]
                res = act_patch(cl, name, ops, "Clearing", "Cleared %s: Ready again; out-of-service taint and annotation removed" % name, s["dry"])
                if res == "changed":
                    return "changed"
                ok &= res
                return "acted"
            return
        if r.get("status") != "Unknown":
            return
        age = since(r)
        if age < s["taint"] and not oos:
            due.append(s["taint"] - age)
        if s["prune"] is not None and age < s["prune"] and labels.get(s["label"]) == "true":
            due.append(s["prune"] - age)
        if s["prune"] is not None and age >= s["prune"] and labels.get(s["label"]) == "true" and \
                excluded(name, labels, "deleting"):
            return
        if age >= s["taint"] and not oos and excluded(name, labels, "tainting"):
            return
        if s["prune"] is not None and age >= s["prune"] and labels.get(s["label"]) == "true" and hold():
            return
        if s["prune"] is not None and age >= s["prune"] and labels.get(s["label"]) == "true":
            if CP in labels:
                once("Not deleting %s: it is a control-plane node" % name)
                ok = False
            elif ETCD in labels:
                once("Not deleting %s: it is an etcd member" % name)
                ok = False
            elif voters < 3:
                once("Not deleting %s: only %d Ready etcd members would remain, fewer than the 3 a cluster needs to tolerate losing one" % (name, voters))
                ok = False
            else:
                opts = {"kind": "DeleteOptions", "apiVersion": "v1",
                        "preconditions": {"uid": md.get("uid"), "resourceVersion": rv}}
                if s["dry"] == "server":
                    opts["dryRun"] = ["All"]
                if s["dry"] == "client":
                    log("Would delete %s: not reporting for %ds (dry run: nothing sent)" % (name, age))
                    return
                st, _ = cl.call("DELETE", "/api/v1/nodes/" + name + ("?dryRun=All" if s["dry"] else ""),
                                json.dumps(opts), "application/json")
                if st == 200 and s["dry"]:
                    log("Would delete %s: not reporting for %ds (dry run: the server accepted it)" % (name, age))
                elif st == 200:
                    log("Deleted %s: not reporting for %ds" % (name, age))
                    written[name] = None
                elif st == 409:
                    return "changed"
                elif st == 404:
                    log("%s already gone" % name)
                else:
                    log("Deleting %s failed: HTTP %d" % (name, st))
                    ok = False
                return "acted"
        if age < s["taint"] or oos or hold():
            return
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(server_now()))
        ops = [test]
        t = {"key": OOS, "value": "nodeshutdown", "effect": "NoExecute"}
        ops.append({"op": "add", "path": "/spec/taints/-", "value": t} if "taints" in (n.get("spec") or {})
                   else {"op": "add", "path": "/spec/taints", "value": [t]})
        ops.append({"op": "add", "path": "/metadata/annotations/" + esc(s["ann"]), "value": now}
                   if "annotations" in md else {"op": "add", "path": "/metadata/annotations", "value": {s["ann"]: now}})
        res = act_patch(cl, name, ops, "Tainting", "Tainted %s %s=nodeshutdown:NoExecute: not reporting for %ds" % (name, OOS, age), s["dry"])
        if res == "changed":
            return "changed"
        ok &= res
        return "acted"

    unneeded = 0
    for n in nodes:
        for tries in range(4):
            res = handle(n)
            if res != "changed":
                if tries and res != "acted":
                    unneeded += 1
                    if unneeded <= 3:
                        log("%s changed since it was listed; nothing to do now" % n["metadata"]["name"])
                break
            name = n["metadata"]["name"]
            if tries == 3:
                log("%s kept changing while it was acted on (4 tries); next pass" % name)
                break
            st, data = cl.call("GET", "/api/v1/nodes?limit=2&fieldSelector=" + urllib.parse.quote("metadata.name=" + name, safe=""))
            items = json.loads(data).get("items") if st == 200 else None
            if not items:
                log("%s already gone" % name if st == 200 else "%s: reading it again failed" % name)
                ok = ok and st == 200
                break
            n = items[0]
    if unneeded > 3:
        log("%d more nodes changed since they were listed; nothing to do now for them either" % (unneeded - 3))
    told.clear()
    told.update(telling)
    return ok and not (holding and held[0]), min(due) if due else None


GENERIC_422 = "the server rejected our request due to an error in our request"


def act_patch(cl, name, ops, verb, msg, dry=None):
    would = "Would " + {"Tainted": "taint", "Cleared": "clear"}[msg.split()[0]] + msg[msg.index(" "):]
    if dry == "client":
        log(would + " (dry run: nothing sent)")
        return True
    st, data = cl.call("PATCH", "/api/v1/nodes/" + name + ("?dryRun=All" if dry else ""), json.dumps(ops),
                       "application/json-patch+json")
    if st == 200:
        log(would + " (dry run: the server accepted it)" if dry else msg)
        if not dry:
            try:
                written[name] = json.loads(data)
            except ValueError:
                pass
        return True
    try:
        status = json.loads(data)
    except ValueError:
        status = {}
    if not isinstance(status, dict):
        status = {}
    # only a failed test op is "changed": a validation error or an admission denial fails
    if st == 422 and status.get("reason") == "Invalid" and status.get("message") == GENERIC_422:
        return "changed"
    log("%s %s failed: HTTP %d %s: %s" % (verb, name, st, status.get("reason", ""), status.get("message", "")))
    return False


def no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise ValueError("a key written twice")
    return dict(pairs)


def check_access(s, cl):
    """The permission check: False when a permission the settings need is denied (logged);
    a review that cannot be made or read is logged and the check ends, True."""
    needs = [("list", "deploy/noderecover.yaml")]
    if s["dry"] != "client":
        needs.append(("patch", "deploy/noderecover.yaml"))
        if s["prune"]:
            needs.append(("delete", "deploy/noderecover-prune.yaml"))
    needs = [(verb, file, "", "nodes", None) for verb, file in needs]
    if s["dry"] is None:
        # noderecover posts Events (the model does not, but asks as it does)
        needs.append(("create", "deploy/noderecover.yaml", "events.k8s.io", "events", "default"))
    for verb, file, group, resource, ns in needs:
        attrs = {"verb": verb, "group": group, "resource": resource}
        if ns:
            attrs = dict(namespace=ns, **attrs)
        body = json.dumps({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                           "spec": {"resourceAttributes": attrs}})
        try:
            st, data = cl.call("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body, "application/json")
            allowed = None
            if 200 <= st < 300:
                status = json.loads(data, object_pairs_hook=no_duplicates)["status"]
                allowed = status["allowed"]
                if allowed is True and status.get("denied") is True:
                    allowed = None  # says both: not an answer
        except (Fail, ValueError, KeyError, TypeError, UnicodeDecodeError) as e:
            st, allowed = str(e), None
        if allowed is False:
            user = "this service account/user"
            try:
                st, data = cl.call("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                                   '{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}', "application/json")
                if 200 <= st < 300:
                    user = json.loads(data)["status"]["userInfo"]["username"].replace("\n", " ")
                    tok = cl.token() or ""
                    for i in range(len(tok) - 7):
                        user = user.replace(tok[i:i + 8], "[redacted]")
            except (Fail, ValueError, KeyError, TypeError, AttributeError):
                pass
            log("Permission check: %s may not %s %s%s, which these settings need: %s grants it; not starting"
                % (user, verb, resource + ("." + group if group else ""),
                   " in namespace " + ns if ns else " (cluster-wide)",
                   file if s["prune"] is None or verb == "delete" else "deploy/noderecover-prune.yaml"))
            return False
        if allowed is not True:
            log("Permission check not made: asking whether we may %s %s: %s; going on without it"
                % (verb, resource, "HTTP %d" % st if isinstance(st, int) else st))
            return True
    return True


MAX_EVENT = 256 * 1024


def watch_reader(s, cl, rv, q, tag, hold, silence):
    """One watch stream, read in a thread: puts (tag, what, value) on q."""
    conn = None
    try:
        conn = cl.connect()
        hold.append(conn)
        h = {"Accept": "application/json"}
        tok = cl.token()
        if tok and not s.get("cert"):
            h["Authorization"] = "Bearer " + tok
        path = "/api/v1/nodes?watch=1&resourceVersion=%s&allowWatchBookmarks=true&timeoutSeconds=%d" % (
            urllib.parse.quote(rv or "", safe=""), random.randint(300, 600))
        conn.request("GET", path, headers=h)
        r = conn.getresponse()
        if r.status != 200:
            body = r.read()
            q.put((tag, "status", (r.status, r.getheader("Retry-After"), body)))
            return
        conn.sock.settimeout(silence)
        log("Watching nodes from resourceVersion %s" % rv)
        while True:
            line = r.readline(MAX_EVENT + 1)
            if not line:
                q.put((tag, "end", None))
                return
            if len(line) > MAX_EVENT or not line.endswith(b"\n"):
                q.put((tag, "broken", "an event over %d bytes" % MAX_EVENT if len(line) > MAX_EVENT
                       else "cut mid-event"))
                return
            try:
                ev = json.loads(line)
            except ValueError:
                q.put((tag, "broken", "not JSON"))
                return
            q.put((tag, "event", ev))
    except socket.timeout:
        q.put((tag, "silent", None))
    except (OSError, http.client.HTTPException, ssl.SSLError, ValueError) as e:
        q.put((tag, "fail", e.__class__.__name__))
    finally:
        if conn is not None:
            try:
                conn.close()
            except OSError:
                pass


def watch_loop(s, cl):
    """run with the watch: list, watch, decide on each event and twice a second; see the top."""
    try:
        scale = max(1, min(1000, int(os.environ.get("NODERECOVER_TEST_DEADLINE_SCALE", "1"))))
    except ValueError:
        scale = 1
    silence = 120.0 / scale
    q = queue.Queue()
    table, rv, need_list, tag = {}, None, "start", 0
    backoff = 0.8 / scale
    relist_at = 0.0
    hold = []   # the current stream's connection, once its thread has made it

    def drop():
        for c in hold:
            try:
                c.sock.shutdown(socket.SHUT_RDWR)
            except (OSError, AttributeError):
                pass

    def pause(secs):
        end = time.monotonic() + secs
        while not stop and time.monotonic() < end:
            time.sleep(0.05)

    while not stop:
        if need_list:
            try:
                nodes, rv = list_nodes(s, cl)
            except Fail as e:
                log("listing nodes failed: %s; again in %.1fs" % (e, backoff))
                pause(backoff)
                backoff = min(backoff * 2, 30.0 / scale)
                continue
            table = {n["metadata"]["name"]: n for n in nodes}
            decide(s, cl, list(table.values()))
            relist_at = time.monotonic() + s["relist"] * random.uniform(0.8, 1.0)
            need_list = None
        tag += 1
        hold = []
        threading.Thread(target=watch_reader, args=(s, cl, rv, q, tag, hold, silence), daemon=True).start()
        again = None
        last_decide = time.monotonic()
        while not stop and again is None:
            if time.monotonic() >= relist_at:
                need_list = again = "periodic"
                break
            try:
                t, what, val = q.get(timeout=0.1)
            except queue.Empty:
                t = None
            if t is not None and t != tag:
                continue
            if t is None:
                pass
            elif what == "event":
                typ = val.get("type") if isinstance(val, dict) else None
                obj = val.get("object") if isinstance(val, dict) else None
                if typ == "BOOKMARK" and isinstance(obj, dict):
                    rv = (obj.get("metadata") or {}).get("resourceVersion", rv)
                elif typ == "ERROR":
                    code = (obj or {}).get("code")
                    if code == 410 or (obj or {}).get("reason") in ("Expired", "Gone"):
                        log("Watch of nodes expired (410); relisting")
                        need_list = again = "expired"
                    else:
                        log("Watch of nodes failed: %s; again in %.1fs" % ((obj or {}).get("message"), backoff))
                        again = "backoff"
                elif typ in ("ADDED", "MODIFIED", "DELETED") and isinstance(obj, dict) and obj.get("kind") == "Node" \
                        and isinstance(obj.get("metadata"), dict) and obj["metadata"].get("name"):
                    name = obj["metadata"]["name"]
                    rv = obj["metadata"].get("resourceVersion", rv)
                    if typ == "DELETED":
                        table.pop(name, None)
                    else:
                        table[name] = obj
                    decide(s, cl, list(table.values()))
                    last_decide = time.monotonic()
                else:
                    log("Watch stream broken: an event of type %r holding %r; relisting" % (
                        typ, (obj or {}).get("kind") if isinstance(obj, dict) else obj))
                    need_list = again = "broken"
            elif what == "broken":
                log("Watch stream broken: %s; relisting" % val)
                need_list = again = "broken"
            elif what == "end":
                again = "resume"
            elif what == "silent":
                log("Watch stream silent for %ds; resuming from resourceVersion %s" % (silence, rv))
                again = "resume"
            elif what == "status":
                st, ra, body = val
                if st == 410:
                    log("Watch of nodes expired (410); relisting")
                    need_list = again = "expired"
                elif st == 429:
                    wait = int(ra) if ra and ra.isdigit() else 1
                    pause(wait)
                    again = "resume"
                else:
                    log("Watch of nodes failed: HTTP %d; again in %.1fs" % (st, backoff))
                    again = "backoff"
            elif what == "fail":
                log("Watch of nodes failed: %s; again in %.1fs" % (val, backoff))
                again = "backoff"
            for name, n in list(written.items()):
                if n is None:
                    table.pop(name, None)
                elif name in table and int(n["metadata"]["resourceVersion"]) > int(table[name]["metadata"]["resourceVersion"]):
                    table[name] = n
            written.clear()
            if time.monotonic() - last_decide >= 0.5:
                decide(s, cl, list(table.values()))
                last_decide = time.monotonic()
        drop()
        if again == "backoff":
            pause(backoff)
            backoff = min(backoff * 2, 30.0 / scale)
        elif again in ("resume", None):
            backoff = 0.8 / scale


def yaml_get(text, key):
    m = re.search(r"^\s*-?\s*%s:\s*(\S+)\s*$" % re.escape(key), text, re.M)
    return m.group(1) if m else None


def main(argv):
    global stop
    mode = "run"
    args = argv[1:]
    if args and not args[0].startswith("-"):
        mode = args.pop(0)
    if mode in ("version", "help"):
        print("refwatcher (a model for the tests)" if mode == "version" else "usage: refwatcher [run|once] ...")
        return 0
    val = {}
    while args:
        a = args.pop(0)
        if "=" in a and a.startswith("--"):
            a, v = a.split("=", 1)
            args.insert(0, v)
        elif a == "--dry-run":
            args.insert(0, "client")
        elif a == "--watch":
            args.insert(0, "true")
        if a not in FLAGS or not args:
            refuse("unknown option '%s'" % a)
        val[a] = args.pop(0)
    for f, e in FLAGS.items():
        if f not in val and e and e in os.environ:
            val[f] = os.environ[e]
    for f, d in DEFAULTS.items():
        val.setdefault(f, d)
    if not val.get("--taint-after"):
        refuse("--taint-after (or NODE_RECOVERY_AFTER_SECONDS) is required")
    s = {"taint": seconds("--taint-after", val["--taint-after"]), "prune": None,
         "label": val["--prune-label"], "ann": val["--annotation"],
         "self": val.get("--self-node") or socket.gethostname(), "poll": seconds("--poll", val["--poll"]),
         "page": whole("--page-size", val["--page-size"])}
    if not re.fullmatch(r"([1-9][0-9]{0,8}|([1-9][0-9]?|100)%)", val["--max-unknown"]):
        refuse("--max-unknown (NODE_RECOVERY_MAX_UNKNOWN) '%s' is neither a number of nodes nor a percentage" % val["--max-unknown"])
    s["max_unknown"] = val["--max-unknown"]
    s["exclude"] = val["--exclude-label"]
    dry = {"client": "client", "true": "client", "server": "server", "none": None, "false": None, "": None}
    if val.get("--dry-run") not in dry and "--dry-run" in val:
        refuse("--dry-run (NODE_RECOVERY_DRY_RUN) '%s' is not one of client, server or none" % val["--dry-run"])
    s["dry"] = dry.get(val.get("--dry-run", ""))
    if val["--watch"] not in ("true", "false"):
        refuse("--watch (NODE_RECOVERY_WATCH) '%s' is neither true nor false" % val["--watch"])
    s["watch"] = val["--watch"] == "true"
    s["relist"] = seconds("--relist", val["--relist"])
    if not 1 <= s["relist"] <= 86400:
        refuse("--relist (NODE_RECOVERY_RELIST_SECONDS) must be 1 to 86400 seconds")
    s["cooldown"] = seconds("--storm-cooldown", val["--storm-cooldown"]) if "--storm-cooldown" in val else s["taint"]
    if s["poll"] > 86400:
        refuse("--poll (NODE_RECOVERY_POLL_SECONDS) '%s' is longer than 24h, the most it takes" % val["--poll"])
    if s["poll"] < 1 or s["page"] < 1:
        refuse("--poll and --page-size must be at least 1" if s["poll"] < 1 else "--page-size must be at least 1")
    if val.get("--prune-after"):
        s["prune"] = seconds("--prune-after", val["--prune-after"])
        if s["prune"] <= s["taint"]:
            refuse("--prune-after (%d) must be greater than the taint threshold (%d)" % (s["prune"], s["taint"]))
    if val.get("--server"):
        s["server"] = val["--server"]
        try:
            s["ca_pem"] = open(val["--ca-file"]).read()
        except (OSError, KeyError, TypeError):
            refuse("cannot read CA file %s" % val.get("--ca-file"))
        s["token_file"] = val.get("--token-file")
        try:
            tok = open(s["token_file"], "rb").read().rstrip(b"\r\n\t ")
        except (OSError, TypeError):
            refuse("cannot read token file %s" % s["token_file"])
        if not tok or len(tok) > 8192 or any(c < 0x21 or c > 0x7e for c in tok):
            refuse("token file %s is empty, longer than 8192 bytes, or holds a character a bearer token cannot have"
                   % s["token_file"])
        s["tls_server_name"] = val.get("--tls-server-name")
    elif val.get("--kubeconfig"):
        try:
            kc = open(val["--kubeconfig"]).read()
        except OSError:
            refuse("cannot read kubeconfig %s" % val["--kubeconfig"])
        if "insecure-skip-tls-verify: true" in kc or re.search(r"^\s*exec:", kc, re.M):
            refuse("kubeconfig %s asks for insecure-skip-tls-verify or an exec plugin" % val["--kubeconfig"])
        s["server"] = yaml_get(kc, "server")
        if yaml_get(kc, "certificate-authority-data"):
            s["ca_pem"] = base64.b64decode(yaml_get(kc, "certificate-authority-data")).decode()
        else:
            s["ca_pem"] = open(yaml_get(kc, "certificate-authority")).read()
        s["token"] = yaml_get(kc, "token")
        s["token_file"] = yaml_get(kc, "tokenFile")
        d = tempfile.mkdtemp()
        for k, fn in (("client-certificate", "c.crt"), ("client-key", "c.key")):
            v = yaml_get(kc, k + "-data")
            if v:
                with open(os.path.join(d, fn), "wb") as f:
                    f.write(base64.b64decode(v))
                s["cert" if fn == "c.crt" else "key"] = os.path.join(d, fn)
            elif yaml_get(kc, k):
                s["cert" if fn == "c.crt" else "key"] = yaml_get(kc, k)
    else:
        refuse("no cluster: give --server or --kubeconfig")
    if not s["server"].startswith("https://"):
        refuse("server '%s' is not an https:// URL" % s["server"])
    log("starting %s: taint after %ds, prune after %s, server %s" % (mode, s["taint"], s["prune"], s["server"]))
    cl = Client(s)

    def on_sig(*_):
        global stop
        stop = True
        raise Stop()  # the request in flight is abandoned, as the binary does
    signal.signal(signal.SIGTERM, on_sig)
    signal.signal(signal.SIGINT, on_sig)
    try:
        if not check_access(s, cl):
            return 2
    except Stop:
        return 1
    if mode == "plan":   # the model plans nothing: one list, no action
        try:
            list_nodes(s, cl)
            return 0
        except (Fail, Stop):
            return 1
    if mode == "once":
        try:
            return 0 if one_pass(s, cl)[0] else 1
        except Fail as e:
            log("pass failed: %s" % e)
            return 1
        except Stop:
            log("the pass did not finish: stopped by a signal")
            return 1
    if s["watch"]:
        try:
            watch_loop(s, cl)
        except Stop:
            pass
        log("noderecover stopping on a signal")
        return 0
    try:
        while not stop:
            due = None
            try:
                due = one_pass(s, cl)[1]
            except Fail as e:
                log("pass failed: %s" % e)
            # wake when a node seen Unknown crosses its threshold, not a poll later
            end = time.monotonic() + (min(s["poll"], due) if due is not None else s["poll"])
            while not stop and time.monotonic() < end:
                time.sleep(0.05)
    except Stop:
        pass
    log("noderecover stopping on a signal")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
