"""A stand-in kube-apiserver for the node API, over TLS, for testing noderecover.

It owns an in-memory set of Node objects and answers the few calls the binary makes the
way kube-apiserver does where it matters: paged lists with `continue` (and 410 Expired on
demand), JSON patch (RFC 6902) applied for real with resourceVersion bumped, DELETE with
uid/resourceVersion preconditions, 401/403/404/409/422/429/503 with the real Status bodies;
coordination.k8s.io/v1 Leases (GET, POST, PUT with the resourceVersion test: 409, JSON patch, a
list of a namespace's Leases by an equality labelSelector; `review_deny` pairs refuse them with
403 too); GET /readyz ("ok"); the two
reviews the permission check makes (SelfSubjectAccessReview, SelfSubjectReview); and
events.k8s.io/v1 Events created (validated as kube-apiserver does, stored in posted); and
watches of nodes (`?watch=1`) as kube-apiserver's watch cache serves them: one resourceVersion
counter for every change, a log of node events replayed from the watch's resourceVersion and
then streamed live, bookmarks, 410 for a compacted resourceVersion (an ERROR event in a started
200 stream, or before it), ERROR events, timeoutSeconds, and on demand a silent, ended or cut
stream, bytes split anywhere, and raw (broken, oversized, foreign) events. See "Watches" below.
Faults are injected per request by rules. Every request is recorded.

It never talks to anything but the loopback address it listens on, and every loop in it is
bounded by the server's stop flag or a timeout.

Use it in-process:

    srv = StandIn(certdir, nodes=[...]).start()
    ... run the binary against srv.url ...
    srv.requests            # every Request seen
    srv.nodes["agent-1"]    # state after the run
    srv.posted              # Events created, in order
    srv.stop()

Watches: every change to a node (add_node, touch, delete_node, a PATCH or DELETE from the client,
flood) takes the next resourceVersion and appends an event to srv.log. A watch from RV X replays
the events after X, then streams new ones until its timeoutSeconds (or srv.watch_max_seconds),
or until the test ends it: srv.end_watches(), srv.cut_watches(), srv.silence_watches(),
srv.watch_error(410), srv.watch_send(raw). srv.compact() makes every RV before now too old
(410). A rule's Fault("watch", ...) shapes one stream (its error, its end, its silence, how its
bytes are split); srv.watches() are the watch requests, each with .rv (its resourceVersion),
.events_sent and .ended once it is over.
"""
import base64
import collections
import copy
import json
import os
import random
import re
import shutil
import socket
import ssl
import tempfile
import threading
import time
import urllib.parse

__all__ = ["StandIn", "Request", "Reply", "Fault", "apply_patch", "PatchError", "status_body", "SSAR_PATH", "SSR_PATH"]

MAX_REQUEST_HEADER = 64 * 1024
MAX_REQUEST_BODY = 4 * 1024 * 1024
LEASES = "/apis/coordination.k8s.io/v1/namespaces/"
# metav1.MicroTime as kube-apiserver reads it (RFC3339Micro): exactly six fractional digits
MICROTIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$")
SSAR_PATH = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
SSR_PATH = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
REVIEWS = (SSAR_PATH, SSR_PATH)


# ---------------------------------------------------------------- JSON, as Go writes it

def go_json(obj):
    """Compact JSON with Go's HTML escaping of < > & and raw UTF-8, as kube-apiserver sends."""
    s = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
    s = s.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    s = s.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return s.encode("utf-8")


def status_body(code, reason, message, details=None, metadata=None):
    st = {"kind": "Status", "apiVersion": "v1", "metadata": metadata or {}, "status": "Failure",
          "message": message, "reason": reason}
    if details is not None:
        st["details"] = details
    st["code"] = code
    return st


def error_status(code, message=None, reason=None, rv=0, asked=None):
    """The Status an ERROR watch event carries, worded as kube-apiserver's cacher does."""
    if code == 410:
        return status_body(410, reason or "Expired", message or "too old resource version: %s (%d)" % (
            asked if asked is not None else 1, rv))
    if code == 504:
        return status_body(504, reason or "Timeout", message or "Too large resource version: %s, current: %d" % (
            asked if asked is not None else rv + 1, rv),
            {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
             "retryAfterSeconds": 1})
    if code == 500:
        return status_body(500, reason or "InternalError", message or "Internal error occurred: etcdserver: no leader")
    return status_body(code, reason or "", message or "watch failed with code %d" % code)


# What a BOOKMARK's object is on the wire: an empty Node but for its resourceVersion (Go encodes
# the zero values of the struct fields it cannot omit)
def bookmark_event(rv):
    return {"type": "BOOKMARK", "object": {
        "kind": "Node", "apiVersion": "v1", "metadata": {"resourceVersion": str(rv), "creationTimestamp": None},
        "spec": {}, "status": {"daemonEndpoints": {"kubeletEndpoint": {"Port": 0}}, "nodeInfo": {
            "machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": "", "osImage": "",
            "containerRuntimeVersion": "", "kubeletVersion": "", "kubeProxyVersion": "",
            "operatingSystem": "", "architecture": ""}}}}


# ---------------------------------------------------------------- RFC 6902 JSON patch

class PatchError(Exception):
    pass


def _unescape(tok):
    return tok.replace("~1", "/").replace("~0", "~")


def _split_pointer(ptr):
    if not isinstance(ptr, str):
        raise PatchError("path is not a string")
    if ptr == "":
        return []
    if not ptr.startswith("/"):
        raise PatchError("invalid JSON pointer %r" % ptr)
    toks = ptr[1:].split("/")
    for t in toks:
        # "~" must be followed by 0 or 1
        i = 0
        while True:
            i = t.find("~", i)
            if i < 0:
                break
            if i + 1 >= len(t) or t[i + 1] not in "01":
                raise PatchError("invalid escape in JSON pointer %r" % ptr)
            i += 2
    return [_unescape(t) for t in toks]


def _index(container, tok, allow_end=False):
    if tok == "-" and allow_end:
        return len(container)
    if not tok.isdigit() or (len(tok) > 1 and tok[0] == "0"):
        raise PatchError("invalid array index %r" % tok)
    i = int(tok)
    if i > len(container) or (i == len(container) and not allow_end):
        raise PatchError("array index %d out of bounds" % i)
    return i


def _parent(doc, toks):
    cur = doc
    for t in toks[:-1]:
        if isinstance(cur, dict):
            if t not in cur:
                raise PatchError("doc is missing path: %s" % t)
            cur = cur[t]
        elif isinstance(cur, list):
            cur = cur[_index(cur, t)]
        else:
            raise PatchError("doc is missing path: %s" % t)
    return cur


def _get(doc, toks):
    if not toks:
        return doc
    p = _parent(doc, toks)
    t = toks[-1]
    if isinstance(p, dict):
        if t not in p:
            raise PatchError("doc is missing key: %s" % t)
        return p[t]
    if isinstance(p, list):
        return p[_index(p, t)]
    raise PatchError("doc is missing path")


def _add(doc, toks, value):
    if not toks:
        return value
    p = _parent(doc, toks)
    t = toks[-1]
    if isinstance(p, dict):
        p[t] = value
    elif isinstance(p, list):
        p.insert(_index(p, t, allow_end=True), value)
    else:
        raise PatchError("doc is missing path: unable to add")
    return doc


def _remove(doc, toks):
    if not toks:
        raise PatchError("cannot remove the whole document")
    p = _parent(doc, toks)
    t = toks[-1]
    if isinstance(p, dict):
        if t not in p:
            raise PatchError("unable to remove nonexistent key: %s: missing value" % t)
        return p.pop(t)
    if isinstance(p, list):
        return p.pop(_index(p, t))
    raise PatchError("doc is missing path")


def apply_patch(doc, ops):
    """Apply an RFC 6902 patch to a deep copy of doc and return it; raise PatchError."""
    if not isinstance(ops, list):
        raise PatchError("patch is not an array")
    doc = copy.deepcopy(doc)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op:
            raise PatchError("operation has no op")
        kind = op["op"]
        toks = _split_pointer(op.get("path"))
        if kind in ("add", "replace", "test") and "value" not in op:
            raise PatchError("operation %s has no value" % kind)
        if kind == "add":
            doc = _add(doc, toks, copy.deepcopy(op["value"]))
        elif kind == "remove":
            _remove(doc, toks)
        elif kind == "replace":
            _get(doc, toks)  # must exist
            if toks:
                _remove(doc, toks)
            doc = _add(doc, toks, copy.deepcopy(op["value"]))
        elif kind == "test":
            try:
                cur = _get(doc, toks)
            except PatchError:
                raise PatchError("testing value %s failed: test failed" % op["path"])
            if cur != op["value"] or type(cur) is not type(op["value"]):
                raise PatchError("testing value %s failed: test failed" % op["path"])
        elif kind in ("move", "copy"):
            ftoks = _split_pointer(op.get("from"))
            v = _get(doc, ftoks)
            if kind == "move":
                if toks[:len(ftoks)] == ftoks and len(toks) > len(ftoks):
                    raise PatchError("cannot move into a child")
                _remove(doc, ftoks)
            doc = _add(doc, toks, copy.deepcopy(v))
        else:
            raise PatchError("Unexpected kind: %s" % kind)
    return doc


# ---------------------------------------------------------------- requests, replies, faults

class Request:
    """One request as the server saw it."""

    def __init__(self, conn_id, method, target, version, headers, body, client_cert):
        self.conn_id = conn_id
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers  # list of (name, value), names as sent
        self.body = body
        self.client_cert = client_cert
        self.time = time.monotonic()
        u = urllib.parse.urlsplit(target)
        self.path = u.path
        self.raw_query = u.query
        self.query = urllib.parse.parse_qsl(u.query, keep_blank_values=True)
        self.status = None  # filled in once answered (None: no HTTP answer, a fault)
        self.reply = None   # the Reply sent, when it was a whole one
        self.events_sent = 0   # a watch: events (bookmarks and ERRORs included) sent on its stream
        self.ended = None      # a watch: how its stream ended, once it has: "timeout", "end",
        #                        "cut", "error", "silent", "gone" (the client left), "stop"
        self.sent = {}         # a watch: events sent by type (ADDED ... BOOKMARK, ERROR, RAW)

    def header(self, name, default=None):
        n = name.lower()
        for k, v in self.headers:
            if k.lower() == n:
                return v
        return default

    def header_all(self, name):
        n = name.lower()
        return [v for k, v in self.headers if k.lower() == n]

    def json(self):
        return json.loads(self.body.decode("utf-8"))

    def qdict(self):
        return dict(self.query)

    @property
    def node_name(self):
        p = self.path
        pre = "/api/v1/nodes/"
        if p.startswith(pre) and len(p) > len(pre):
            return urllib.parse.unquote(p[len(pre):])
        return None

    @property
    def is_list(self):
        return self.method == "GET" and self.path == "/api/v1/nodes" and not self.is_watch

    @property
    def is_watch(self):
        return self.method == "GET" and self.path == "/api/v1/nodes" and \
            self.qdict().get("watch") in ("1", "true")

    @property
    def rv(self):
        """The resourceVersion the request asked for (a watch's), or None."""
        return self.qdict().get("resourceVersion")

    @property
    def is_event(self):
        return EVENTS_PATH.match(self.path) is not None

    def __repr__(self):
        return "<%s %s -> %s>" % (self.method, self.target, self.status)


class Reply:
    """A canned HTTP answer. body: bytes, str, or a JSON-able object (sent as JSON)."""

    def __init__(self, status, body=b"", headers=None, chunked=None, content_type=None):
        self.status = status
        if isinstance(body, (dict, list)):
            body = go_json(body)
            content_type = content_type or "application/json"
        elif isinstance(body, str):
            body = body.encode()
        self.body = body
        self.headers = list(headers or [])
        if content_type:
            self.headers.append(("Content-Type", content_type))
        self.chunked = chunked


class Fault:
    """A misbehaviour. kind is one of:
      close_mid_body    send the headers and part of the body, then close (chunked or length)
      close_no_reply    close the connection without a byte of reply
      bad_chunk         a valid chunk, then a chunk size line that is not hex
      garbage_json      200, application/json, a body that is not JSON
      truncated_json    200 with a well-framed body holding a JSON document cut short
      slow              headers and part of the body, then nothing for `seconds`, then close
      slow_headers      nothing at all for `seconds`, then close
      huge_header       200 with one header line of `size` bytes, then the normal answer
      many_headers      200 with `count` small headers, then the normal answer
      redirect          302 to `location`
      raw               send `data` bytes as they are, then close
      delay             wait `seconds`, then answer normally (the request is applied then)
      trickle           the normal answer (the request applied) with Content-Length, its first
                        `start` bytes at once and the rest one byte every `every` seconds, for
                        at most `seconds`, then close (a server that keeps each read alive)
      endless           200 chunked, then `data` (default a chunk-size line of zeros) sent again
                        and again for `seconds`, then close (framing without data, no end)
      status            `status` with a Status body saying `message` (reason `reason`), or a
                        raw `body`, with `headers`: a refusal that echoes what the test wants
      watch             (a watch request) the stream as usual, shaped by: `error` (a code, or a
                        Status dict: an ERROR event, then the end) after `error_after` events
                        (default 0); `end_after` / `cut_after` / `silent_after` N events: end it
                        normally, cut it mid-event, or go silent (open, nothing sent, not even
                        bookmarks); `seconds` its length instead of timeoutSeconds; `chunk`
                        bytes per chunk and `send` bytes per send (int or "random"; see
                        StandIn.watch_chunk, watch_split); `bookmark_every` seconds; `raw` a list of items
                        (bytes or event dicts) sent first, before the replay
    """

    def __init__(self, kind, **kw):
        self.kind = kind
        self.kw = kw


class Rule:
    def __init__(self, match, action, times):
        self.match = match
        self.action = action
        self.times = times  # None: forever
        self.hits = 0


def _matcher(method=None, path=None, path_prefix=None, list_only=False, follow_up=None, node=None,
             pred=None, watch=None):
    def m(req):
        if method and req.method != method:
            return False
        if path and req.path != path:
            return False
        if path_prefix and not req.path.startswith(path_prefix):
            return False
        if list_only and not req.is_list:
            return False
        if watch is not None and req.is_watch != watch:
            return False
        if follow_up is not None and (("continue" in req.qdict()) != follow_up):
            return False
        if node is not None and req.node_name != node:
            return False
        if pred and not pred(req):
            return False
        return True
    return m


# ---------------------------------------------------------------- Events

EVENTS_PATH = re.compile(r"^/apis/events\.k8s\.io/v1/namespaces/([^/]+)/events$")
# kube-apiserver's MicroTime layout, RFC3339Micro: exactly six fractional digits
MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}(Z|[+-]\d\d:\d\d)$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
QUALIFIED_NAME = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                            r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


def event_errors(ev, namespace):
    """What kube-apiserver's ValidateEventCreate (events.k8s.io/v1) refuses in ev, as its causes."""
    errs = []
    md = ev.get("metadata") if isinstance(ev.get("metadata"), dict) else {}
    name = md.get("name") or ""
    if not name and not md.get("generateName"):
        errs.append("metadata.name: Required value: name or generateName is required")
    elif name and (len(name) > 253 or not DNS_SUBDOMAIN.match(name)):
        errs.append('metadata.name: Invalid value: "%s": a lowercase RFC 1123 subdomain' % name)
    if md.get("namespace") not in (None, namespace):
        errs.append("metadata.namespace: Invalid value: does not match the namespace of the request")
    t = ev.get("eventTime")
    if not t:
        errs.append("eventTime: Required value")
    elif not isinstance(t, str) or not MICRO_TIME.match(t):
        errs.append('eventTime: Invalid value: parsing time "%s" as "2006-01-02T15:04:05.000000Z07:00"' % t)
    if ev.get("type") not in ("Normal", "Warning"):
        errs.append('type: Unsupported value: "%s": supported values: "Normal", "Warning"' % ev.get("type"))
    rc = ev.get("reportingController")
    if not rc:
        errs.append("reportingController: Required value")
    elif not isinstance(rc, str) or not QUALIFIED_NAME.match(rc) or len(rc.split("/")[-1]) > 63:
        errs.append('reportingController: Invalid value: "%s": must be a qualified name' % rc)
    for f in ("reportingInstance", "action", "reason"):
        v = ev.get(f)
        if not v:
            errs.append("%s: Required value" % f)
        elif not isinstance(v, str) or len(v) > 128:
            errs.append("%s: Too long: may not be more than 128 bytes" % f)
    note = ev.get("note", "")
    if not isinstance(note, str) or len(note.encode("utf-8")) > 1024:
        errs.append("note: Too long: may not be more than 1024 bytes")
    reg = ev.get("regarding") if isinstance(ev.get("regarding"), dict) else {}
    if not reg.get("namespace") and namespace not in ("default", "kube-system"):
        errs.append('metadata.namespace: Invalid value: "%s": does not match regarding.namespace' % namespace)
    for f in ("deprecatedSource", "deprecatedFirstTimestamp", "deprecatedLastTimestamp", "deprecatedCount"):
        if ev.get(f):
            errs.append("%s: Invalid value: needs to be unset" % f)
    series = ev.get("series")
    if series is not None and (not isinstance(series, dict) or not isinstance(series.get("count"), int)
                               or series["count"] < 2 or not series.get("lastObservedTime")):
        errs.append("series: Invalid value: count at least 2 and lastObservedTime required")
    return errs


# ---------------------------------------------------------------- the server

class StandIn:
    """The stand-in API server.

    certdir: the directory certs.make_certs() filled.
    cert:    which server certificate to present: "server" (good), "wrongca", "othername",
             "otherip", "dnsip".
    nodes:   Node dicts (fixtures.node()); listed sorted by name, like etcd keys.
    token:   the bearer token accepted; kept in self.token_file, re-read on every request,
             so a test rotates it by rewriting that file (or set_token()).
    client_ca: require-or-accept client certificates signed by certdir/client-ca.crt.
    verbs:   the verbs granted on nodes (get, list, watch, patch, delete); others get 403, and a
             SelfSubjectAccessReview for them answers allowed: false.
    review_deny: (verb, resource) pairs a SelfSubjectAccessReview denies for resources other than
             nodes (which follow verbs); everything else is allowed.
    username: the user SelfSubjectReview names (and 403 messages).
    event_verbs: the verbs granted on events.k8s.io events in default (create); () forbids
             them all, as a cluster without noderecover's Role does. A slow or failing events
             endpoint is a rule: srv.on(Fault("delay", seconds=5), times=None, path_prefix="/apis/events").
    tokens:  further bearer tokens accepted (one per replica, so requests tell who sent them).
    chunked: send bodies chunked (True) or with Content-Length (False).
    chunk_size: bytes per chunk when chunked (small sizes exercise split reads).
    idle_timeout: close a keep-alive connection silently after this many idle seconds.
    close_each: answer every request with Connection: close and close after it.

    Watch knobs (attributes, settable at any time; a rule's Fault("watch", ...) overrides them
    for one stream):
    bookmark_every: seconds between BOOKMARK events on a watch that allows them (kube-apiserver
             sends about one a minute); None: none.
    watch_max_seconds: end every stream normally after this long, whatever its timeoutSeconds.
    watch_chunk: bytes per HTTP chunk on a watch: None one chunk per event (as kube-apiserver
             flushes), an int (1: one byte per chunk, splitting UTF-8 sequences), "random"
             (1..64, seeded by watch_seed), or "coalesce" (everything pending in one chunk).
    watch_split: bytes per socket send (one TLS record each), None a chunk at a time, an int (1:
             one byte per read, the chunk-size line split too), or "random".
    expire_before_stream: answer a watch from a compacted resourceVersion with HTTP 410 before
             the stream instead of a 200 stream holding one ERROR event (the cacher's way).
    log_max: node events kept in the log; older ones are dropped and their resourceVersions
             become too old (410), as a watch cache's window slides.
    """

    def __init__(self, certdir, cert="server", nodes=(), token="standin-token-0123456789",
                 client_ca=False, verbs=("get", "list", "watch", "patch", "delete"), event_verbs=("create",),
                 chunked=True, chunk_size=1000, idle_timeout=30.0, close_each=False, tokens=(), review_deny=(),
                 username="system:serviceaccount:kube-system:node-recovery"):
        self.certdir = certdir
        self.tokens = set(tokens)
        self.leases = {}  # (namespace, name) -> Lease
        self.lease_pages = 0  # pages of Lease lists answered
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)  # notified on every change a watch may send
        self.nodes = {}
        self.rv = 1000
        # the event log: (seq, rv, type, name, bytes, control); rv None for raw items and
        # controls, which go only to the streams open when they were added
        self.log = collections.deque()
        self.seq = 0
        self.compacted_rv = 0       # a watch or a continue from an RV below this is too old: 410
        self.log_max = 5000
        self.bookmark_every = 60.0
        self.watch_max_seconds = None
        self.watch_chunk = None
        self.watch_split = None
        self.watch_seed = 1
        self.expire_before_stream = False
        self.streams = {}           # open watch streams: id -> the seq of the next log item to send
        for n in nodes:
            self.add_node(n)
        self._tokdir = tempfile.mkdtemp(prefix="standin-srv-")  # certdir stays read-only
        self.token_file = os.path.join(self._tokdir, "token")
        self.set_token(token)
        self.verbs = set(verbs)
        self.event_verbs = set(event_verbs)
        self.posted = []  # Events created, as stored (with uid, resourceVersion)
        self.review_deny = set(review_deny)
        self.username = username
        self.chunked = chunked
        self.chunk_size = chunk_size
        self.idle_timeout = idle_timeout
        self.close_each = close_each
        self.requests = []
        self.rules = []
        self.hooks = []
        self.expire_continue = 0  # answer this many follow-up pages with 410 Expired
        self.clock_offset = 0.0     # seconds the server's clock (its Date header) is ahead of the host's
        self.date_mode = "imf"      # the Date header: "imf" (as Go sends), "rfc850" (unreadable to us), "none"
        self.pretty = False         # indented list bodies (as ?pretty=true gives)
        self.metadata_last = False  # list metadata (continue) after items: valid JSON, not Go's order
        self.list_filter = None     # callable(bytes) -> bytes applied to each list body
        self.connections = 0
        self.handshake_errors = []
        self.events = []  # (monotonic time, text) of connection-level happenings
        self._stop = threading.Event()
        self._conns = set()
        self._threads = []
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(os.path.join(certdir, cert + ".crt"), os.path.join(certdir, cert + ".key"))
        if client_ca:
            ctx.load_verify_locations(os.path.join(certdir, "client-ca.crt"))
            ctx.verify_mode = ssl.CERT_OPTIONAL
        self.ctx = ctx
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.url = "https://127.0.0.1:%d" % self.port

    # ------------------------------------------------------------ control side

    def set_token(self, token):
        tmp = self.token_file + ".new"
        with open(tmp, "w") as f:
            f.write(token)
        os.replace(tmp, self.token_file)

    def add_node(self, n):
        """Add (or replace) a node, as a kubelet registering would: an ADDED (MODIFIED) event."""
        with self.lock:
            n = copy.deepcopy(n)
            self.rv += 1
            n["metadata"]["resourceVersion"] = str(self.rv)
            name = n["metadata"]["name"]
            kind = "MODIFIED" if name in self.nodes else "ADDED"
            self.nodes[name] = n
            self._node_event(kind, n)
            return n

    def touch(self, name, mutate=None):
        """Change a node as another writer would: apply mutate(node) and bump its resourceVersion."""
        with self.lock:
            n = self.nodes[name]
            if mutate:
                mutate(n)
            self.rv += 1
            n["metadata"]["resourceVersion"] = str(self.rv)
            self._node_event("MODIFIED", n)

    def delete_node(self, name):
        """Remove a node as kubectl delete would: a DELETED event carrying its last state."""
        with self.lock:
            n = self.nodes.pop(name)
            self.rv += 1
            n["metadata"]["resourceVersion"] = str(self.rv)
            self._node_event("DELETED", n)

    # ------------------------------------------------------------ watch control

    def _node_event(self, kind, n):
        """Log one node event at the current rv (the lock held) and wake the streams."""
        ev = go_json({"type": kind, "object": self._versioned(n)}) + b"\n"
        self._log(self.rv, kind, n["metadata"]["name"], ev)

    def _log(self, rv, kind, name, data, control=None):
        with self.cond:
            self.log.append((self.seq, rv, kind, name, data, control))
            self.seq += 1
            while len(self.log) > max(1, self.log_max):
                old = self.log.popleft()
                if old[1] is not None:
                    self.compacted_rv = max(self.compacted_rv, old[1] + 1)
            self.cond.notify_all()

    def watch_send(self, item, then=None):
        """Send item to every open watch stream, in order with the node events: bytes as they are
        (a broken event, a part of one), or a dict as one JSON event line. then: "end" or "cut"
        the streams after it. Streams opened later never see it."""
        data = item if isinstance(item, bytes) else go_json(item) + b"\n"
        with self.lock:
            self._log(None, "RAW", None, data, then)

    def watch_error(self, code=410, message=None, reason=None):
        """An ERROR event (a Status) on every open stream, which then ends, as kube-apiserver does."""
        self.watch_send({"type": "ERROR", "object": error_status(code, message, reason, self.rv)}, then="end")

    def end_watches(self):
        """End every open stream normally (the last chunk), as at its timeoutSeconds."""
        with self.lock:
            self._log(None, "CTL", None, b"", "end")

    def cut_watches(self):
        """Cut every open stream: half an event, then the connection closed without the last chunk."""
        with self.lock:
            self._log(None, "CTL", None, b"", "cut")

    def silence_watches(self):
        """Every open stream goes silent: open, nothing more sent, not even a bookmark (a load
        balancer that dropped the connection without a word)."""
        with self.lock:
            self._log(None, "CTL", None, b"", "silent")

    def compact(self, rv=None):
        """Every resourceVersion before rv (default: the current one) becomes too old: a watch or
        a list continue from one gets 410, as after etcd's compaction."""
        with self.lock:
            self.compacted_rv = max(self.compacted_rv, self.rv if rv is None else rv)

    def open_watches(self):
        with self.lock:
            return len(self.streams)

    def watches(self):
        """The watch requests seen, in order."""
        return [r for r in self.reqs() if r.is_watch]

    def lists(self):
        """The list requests seen (not the single-node reads by fieldSelector), in order."""
        return [r for r in self.reqs(list_only=True) if "fieldSelector" not in r.qdict()]

    def flood(self, name, count, lag=2000, stop=None):
        """count MODIFIED events for node name, as fast as the open streams take them (never more
        than lag items ahead of the slowest), each a new resourceVersion and a new value of the
        annotation example.com/seq; the node's other facts stay as they are. Returns the number sent."""
        with self.lock:
            n = self.nodes[name]
            tmpl = copy.deepcopy(self._versioned(n))
            tmpl["metadata"]["resourceVersion"] = "@@RV@@"
            tmpl["metadata"].setdefault("annotations", {})["example.com/seq"] = "@@SEQ@@"
            raw = go_json({"type": "MODIFIED", "object": tmpl}) + b"\n"
        done = 0
        for i in range(count):
            if self._stop.is_set() or (stop is not None and stop.is_set()):
                break
            with self.cond:
                while self.streams and self.seq - min(self.streams.values()) > lag and not self._stop.is_set():
                    self.cond.wait(0.1)
                n = self.nodes.get(name)
                if n is None:
                    break
                self.rv += 1
                n["metadata"]["resourceVersion"] = str(self.rv)
                n["metadata"].setdefault("annotations", {})["example.com/seq"] = str(i)
                data = raw.replace(b"@@RV@@", str(self.rv).encode()).replace(b"@@SEQ@@", str(i).encode())
                self._log(self.rv, "MODIFIED", name, data)
            done += 1
        return done

    def node(self, name):
        with self.lock:
            return copy.deepcopy(self.nodes.get(name))

    def on(self, action, times=1, **match):
        """Answer matching requests with action (a Reply, a Fault, or a callable(req) returning
        one or None to carry on normally), `times` times (None: always). match: method=, path=,
        path_prefix=, list_only=, follow_up=, node=, pred=."""
        r = Rule(_matcher(**match), action, times)
        with self.lock:
            self.rules.append(r)
        return r

    def before(self, hook):
        """hook(server, req) runs before each request is answered (e.g. to touch a node)."""
        self.hooks.append(hook)

    def reqs(self, method=None, node=None, list_only=False, reviews=False):
        """The requests seen, in order; the permission check's reviews (which store nothing)
        only with reviews=True."""
        with self.lock:
            out = list(self.requests)
        return [r for r in out if (reviews or r.path not in REVIEWS) and (method is None or r.method == method)
                and (node is None or r.node_name == node) and (not list_only or r.is_list)]

    def mutating(self):
        """Writes to nodes. Events change no node: they are event_posts()."""
        return [r for r in self.reqs() if r.method not in ("GET", "HEAD") and not r.is_event]

    def event_posts(self):
        """Every request about Events, answered or not."""
        return [r for r in self.reqs() if r.is_event]

    def wait_for(self, cond, timeout):
        """Poll cond() until true or timeout seconds; returns its last value."""
        end = time.monotonic() + timeout
        while True:
            v = cond()
            if v or time.monotonic() > end:
                return v
            time.sleep(0.05)

    def start(self):
        t = threading.Thread(target=self._accept_loop, name="standin-accept", daemon=True)
        t.start()
        self._threads.append(t)
        return self

    def stop(self):
        self._stop.set()
        with self.cond:
            self.cond.notify_all()
        with self.lock:
            conns = list(self._conns)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            try:
                c.close()
            except OSError:
                pass
        for t in list(self._threads):
            t.join(timeout=5)
        try:
            self.sock.close()
        except OSError:
            pass
        shutil.rmtree(self._tokdir, True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *a):
        self.stop()

    # ------------------------------------------------------------ wire side

    def _accept_loop(self):
        while not self._stop.is_set():
            try:
                raw, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            with self.lock:
                self.connections += 1
                cid = self.connections
                self._conns.add(raw)
            t = threading.Thread(target=self._conn_main, args=(raw, cid), daemon=True,
                                 name="standin-conn-%d" % cid)
            t.start()
            self._threads.append(t)

    def _event(self, text):
        with self.lock:
            self.events.append((time.monotonic(), text))

    def _conn_main(self, raw, cid):
        conn = None
        try:
            raw.settimeout(10)
            try:
                conn = self.ctx.wrap_socket(raw, server_side=True)
            except (ssl.SSLError, OSError) as e:
                with self.lock:
                    self.handshake_errors.append(str(e))
                self._event("conn %d handshake failed: %s" % (cid, e))
                return
            with self.lock:
                self._conns.add(conn)
            cert = None
            try:
                cert = conn.getpeercert()
            except (ssl.SSLError, ValueError):
                cert = None
            self._serve(conn, cid, cert or None)
        except (OSError, ssl.SSLError) as e:
            self._event("conn %d: %s" % (cid, e))
        finally:
            for s in (conn, raw):
                if s is None:
                    continue
                try:
                    s.close()
                except OSError:
                    pass
                with self.lock:
                    self._conns.discard(s)

    def _read_until(self, conn, buf, sep, limit):
        while sep not in buf:
            if len(buf) > limit:
                return None, buf
            try:
                d = conn.recv(65536)
            except socket.timeout:
                return None, b""
            if not d:
                return None, b""
            buf += d
        i = buf.index(sep)
        return buf[:i], buf[i + len(sep):]

    def _read_n(self, conn, buf, n):
        while len(buf) < n:
            d = conn.recv(65536)
            if not d:
                raise OSError("eof in request body")
            buf += d
        return buf[:n], buf[n:]

    def _serve(self, conn, cid, cert):
        buf = b""
        conn.settimeout(self.idle_timeout)
        while not self._stop.is_set():
            head, buf = self._read_until(conn, buf, b"\r\n\r\n", MAX_REQUEST_HEADER)
            if head is None:
                if buf:
                    self._send_simple(conn, 431, b"request header too large")
                self._event("conn %d closed (idle or eof)" % cid)
                return
            conn.settimeout(10)
            lines = head.decode("latin-1").split("\r\n")
            try:
                method, target, version = lines[0].split(" ", 2)
            except ValueError:
                self._send_simple(conn, 400, b"bad request line")
                return
            headers = []
            for ln in lines[1:]:
                if ":" not in ln:
                    self._send_simple(conn, 400, b"bad header")
                    return
                k, v = ln.split(":", 1)
                headers.append((k.strip(), v.strip()))
            hdict = {k.lower(): v for k, v in headers}
            body = b""
            if hdict.get("transfer-encoding", "").lower() == "chunked":
                while True:
                    sz, buf = self._read_until(conn, buf, b"\r\n", 100)
                    if sz is None:
                        return
                    n = int(sz.split(b";")[0], 16)
                    if n == 0:
                        _, buf = self._read_until(conn, buf, b"\r\n", 1000)
                        break
                    part, buf = self._read_n(conn, buf, n + 2)
                    body += part[:-2]
                    if len(body) > MAX_REQUEST_BODY:
                        return
            elif "content-length" in hdict:
                n = int(hdict["content-length"])
                if n > MAX_REQUEST_BODY:
                    self._send_simple(conn, 413, b"too large")
                    return
                body, buf = self._read_n(conn, buf, n)
            req = Request(cid, method, target, version, headers, body, cert)
            with self.lock:
                self.requests.append(req)
            keep = self._answer(conn, req)
            if not keep or self.close_each or hdict.get("connection", "").lower() == "close":
                return
            conn.settimeout(self.idle_timeout)

    def _send_simple(self, conn, status, body):
        try:
            conn.sendall(b"HTTP/1.1 %d X\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % (
                status, len(body)) + body)
        except OSError:
            pass

    def _pick(self, req):
        for h in list(self.hooks):
            h(self, req)
        with self.lock:
            for r in self.rules:
                if (r.times is None or r.hits < r.times) and r.match(req):
                    r.hits += 1
                    a = r.action
                    if callable(a) and not isinstance(a, (Reply, Fault)):
                        a = a(req)
                        if a is None:
                            continue
                    return a
        return None

    def _answer(self, conn, req):
        """Send the answer; return whether the connection may be kept."""
        action = self._pick(req)
        if action is None and req.is_watch:
            action = Fault("watch")
        if action is None:
            action = self._handle(req)
        if isinstance(action, Fault):
            return self._fault(conn, req, action)
        req.status = action.status
        req.reply = action
        self._send(conn, action, req)
        return True

    # ------------------------------------------------------------ framing

    def _head(self, status, headers, extra=()):
        reason = {200: "OK", 201: "Created", 302: "Found", 400: "Bad Request", 401: "Unauthorized",
                  403: "Forbidden", 404: "Not Found", 409: "Conflict", 410: "Gone",
                  415: "Unsupported Media Type", 422: "Unprocessable Entity",
                  429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway",
                  503: "Service Unavailable", 504: "Gateway Timeout"}.get(status, "Status")
        h = ["HTTP/1.1 %d %s" % (status, reason)]
        h.append("Audit-Id: %08x-0000-4000-8000-%012x" % (int(time.time()) & 0xffffffff, id(headers) & 0xffffffffffff))
        h.append("Cache-Control: no-cache, private")
        for k, v in headers:
            h.append("%s: %s" % (k, v))
        for k, v in extra:
            h.append("%s: %s" % (k, v))
        h.append("X-Kubernetes-Pf-Flowschema-Uid: 5d2b6c6e-7c1d-4c4e-9a55-2b9a0c1f3e21")
        if self.date_mode == "imf":
            h.append("Date: " + time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + self.clock_offset)))
        elif self.date_mode == "rfc850":
            h.append("Date: " + time.strftime("%A, %d-%b-%y %H:%M:%S GMT", time.gmtime(time.time() + self.clock_offset)))
        if self.close_each:
            h.append("Connection: close")
        return ("\r\n".join(h) + "\r\n").encode("latin-1")

    def _chunks(self, body):
        out = []
        cs = max(1, self.chunk_size)
        for i in range(0, len(body), cs):
            part = body[i:i + cs]
            out.append(b"%x\r\n" % len(part) + part + b"\r\n")
        return out

    def _send(self, conn, rep, req=None, extra=()):
        chunked = self.chunked if rep.chunked is None else rep.chunked
        if chunked:
            head = self._head(rep.status, rep.headers, list(extra) + [("Transfer-Encoding", "chunked")])
            conn.sendall(head + b"\r\n")
            for c in self._chunks(rep.body):
                conn.sendall(c)
            conn.sendall(b"0\r\n\r\n")
        else:
            head = self._head(rep.status, rep.headers, list(extra) + [("Content-Length", str(len(rep.body)))])
            conn.sendall(head + b"\r\n" + rep.body)

    def _fault(self, conn, req, f):
        kind, kw = f.kind, f.kw
        self._event("fault %s on %s %s" % (kind, req.method, req.target))
        if kind == "close_no_reply":
            return False
        if kind == "redirect":
            rep = Reply(302, kw.get("body", ""), headers=[("Location", kw["location"])],
                        content_type="text/html; charset=utf-8")
            req.status = 302
            self._send(conn, rep)
            return True
        if kind == "delay":
            self._stop.wait(kw.get("seconds", 1))
            normal = self._handle(req)
            req.status = normal.status
            req.reply = normal
            self._send(conn, normal)
            return True
        if kind == "raw":
            conn.sendall(kw["data"])
            return False
        if kind == "endless":
            req.status = 200
            conn.sendall(self._head(200, [("Content-Type", "application/json")],
                                    [("Transfer-Encoding", "chunked")]) + b"\r\n")
            data = kw.get("data", b"0" * 4096)
            end = time.monotonic() + kw.get("seconds", 60)
            while time.monotonic() < end and not self._stop.is_set():
                conn.sendall(data)
            return False
        if kind == "watch":
            return self._watch(conn, req, kw)
        if kind == "status":
            st = kw.get("status", 403)
            body = kw.get("body")
            if body is None:
                body = status_body(st, kw.get("reason", "Forbidden"), kw.get("message", ""))
            req.status = st
            self._send(conn, Reply(st, body, headers=kw.get("headers", ()),
                                   content_type=kw.get("content_type")))
            return True
        normal = self._handle(req)
        body = normal.body
        chunked = kw.get("chunked", self.chunked)
        if kind == "garbage_json":
            req.status = 200
            self._send(conn, Reply(200, kw.get("body", b'{"kind":"NodeList","items":[{"metadata":{"name":"x"}}, ]]}{{'),
                                   content_type="application/json", chunked=chunked))
            return True
        if kind == "truncated_json":
            req.status = 200
            self._send(conn, Reply(200, body[:len(body) // 2], content_type="application/json",
                                   chunked=chunked))
            return True
        if kind in ("huge_header", "many_headers"):
            if kind == "huge_header":
                extra = [("X-Standin-Junk", "a" * kw.get("size", 200000))]
            else:
                extra = [("X-Standin-H%d" % i, "v%d" % i) for i in range(kw.get("count", 5000))]
            req.status = normal.status
            self._send(conn, normal, extra=extra)
            return True
        if kind in ("close_mid_body", "bad_chunk", "slow"):
            req.status = normal.status
            half = max(1, len(body) // 2)
            if chunked or kind == "bad_chunk":
                conn.sendall(self._head(normal.status, normal.headers, [("Transfer-Encoding", "chunked")]) + b"\r\n")
                conn.sendall(b"%x\r\n" % half + body[:half] + b"\r\n")
                if kind == "bad_chunk":
                    conn.sendall(b"zz9\r\n" + body[half:] + b"\r\n0\r\n\r\n")
                    return False
            else:
                conn.sendall(self._head(normal.status, normal.headers, [("Content-Length", str(len(body)))])
                             + b"\r\n" + body[:half])
            if kind == "slow":
                self._stop.wait(kw.get("seconds", 60))
            return False
        if kind == "trickle":
            req.status = normal.status
            data = self._head(normal.status, normal.headers, [("Content-Length", str(len(body)))]) + b"\r\n" + body
            start = kw.get("start", 0)
            if start < 0:          # counted from the end of the head: into the body
                start = len(data) - len(body) - start - 1
            conn.sendall(data[:start])
            end = time.monotonic() + kw.get("seconds", 60)
            for i in range(start, len(data)):
                if self._stop.wait(kw.get("every", 0.5)) or time.monotonic() > end:
                    break
                conn.sendall(data[i:i + 1])
            return False
        if kind == "slow_headers":
            self._stop.wait(kw.get("seconds", 60))
            return False
        raise ValueError("unknown fault " + kind)

    # ------------------------------------------------------------ watches

    def _watch_check(self, req):
        """What a watch request is answered before any stream (a Reply), or its start: None for
        "from now, every node ADDED first" (no resourceVersion, "" or "0"), else the int."""
        if not self._auth(req):
            return Reply(401, status_body(401, "Unauthorized", "Unauthorized"))
        if "watch" not in self.verbs:
            return self._forbidden("watch")
        keys = [k for k, _ in req.query]
        bad = [k for k in keys if k not in ("watch", "resourceVersion", "allowWatchBookmarks", "timeoutSeconds")]
        if bad or len(keys) != len(set(keys)):
            return Reply(400, status_body(400, "BadRequest", "stand-in: unexpected watch query parameters %r" % (keys,)))
        qd = req.qdict()
        if "timeoutSeconds" in qd and not qd["timeoutSeconds"].isdigit():
            return Reply(400, status_body(400, "BadRequest", "invalid timeoutSeconds %r" % qd["timeoutSeconds"]))
        if qd.get("allowWatchBookmarks", "false") not in ("true", "false", "1", "0"):
            return Reply(400, status_body(400, "BadRequest", "invalid allowWatchBookmarks %r" % qd["allowWatchBookmarks"]))
        rv = qd.get("resourceVersion", "")
        if rv in ("", "0"):
            return None
        if not rv.isdigit():
            return Reply(400, status_body(400, "BadRequest", 'resourceVersion: Invalid value: "%s"' % rv))
        rv = int(rv)
        if rv < self.compacted_rv and self.expire_before_stream:
            return Reply(410, error_status(410, rv=self.compacted_rv, asked=rv))
        return rv

    def _watch(self, conn, req, kw):
        """Serve one watch stream; return whether the connection may be kept."""
        with self.cond:
            start = self._watch_check(req)
            if isinstance(start, Reply):
                req.status, req.reply = start.status, start
            else:
                sid = object()
                start_seq = self.seq
                self.streams[sid] = self.log[0][0] if self.log else self.seq
                initial = []
                if start is None:   # every node as ADDED, then from now
                    initial = [go_json({"type": "ADDED", "object": self._versioned(self.nodes[nm])}) + b"\n"
                               for nm in sorted(self.nodes)]
                    start = self.rv
                error = kw.get("error")
                error_after = kw.get("error_after", 0)
                if start < self.compacted_rv:
                    error, error_after = error_status(410, rv=self.compacted_rv, asked=start), 0
                elif start > self.rv:
                    error, error_after = error_status(504, rv=self.rv, asked=start), 0
                if isinstance(error, int):
                    error = error_status(error, rv=self.rv)
        if isinstance(start, Reply):
            self._send(conn, start)
            return True
        try:
            return self._stream(conn, req, kw, sid, start, start_seq, initial, error, error_after)
        finally:
            with self.cond:
                self.streams.pop(sid, None)
                self.cond.notify_all()

    def _stream(self, conn, req, kw, sid, start, start_seq, initial, error, error_after):
        qd = req.qdict()
        chunk = kw.get("chunk", self.watch_chunk)
        send = kw.get("send", self.watch_split)
        rng = random.Random(self.watch_seed * 7919 + req.conn_id)
        if send is not None or chunk is not None:
            try:
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
        timeout = float(qd.get("timeoutSeconds", 1800))
        if kw.get("seconds") is not None:
            timeout = kw["seconds"]
        elif self.watch_max_seconds is not None:
            timeout = min(timeout, self.watch_max_seconds)
        bm_every = kw.get("bookmark_every", self.bookmark_every)
        bookmarks = qd.get("allowWatchBookmarks") in ("true", "1") and bm_every
        t0 = time.monotonic()
        end_at = t0 + timeout
        next_bm = t0 + bm_every if bookmarks else None
        limits = {k: kw[k] for k in ("end_after", "cut_after", "silent_after") if kw.get(k) is not None}
        if error is not None:
            limits["error_after"] = error_after

        def write(data):
            if send is None:
                conn.sendall(data)
                return
            i = 0
            while i < len(data):
                k = send if isinstance(send, int) else rng.randint(1, 64)
                conn.sendall(data[i:i + k])
                i += k

        def frame(items):
            if chunk == "coalesce":
                items = [b"".join(items)]
            out = []
            for it in items:
                if chunk is None or chunk == "coalesce":
                    parts = [it]
                else:
                    parts, i = [], 0
                    while i < len(it):
                        k = chunk if isinstance(chunk, int) else rng.randint(1, 64)
                        parts.append(it[i:i + k])
                        i += k
                out += [b"%x\r\n" % len(p) + p + b"\r\n" for p in parts if p]
            return b"".join(out)

        counted = [0]   # node events and raw items sent: what the *_after limits count

        def emit(items, kinds, count=True):
            write(frame(items))
            req.events_sent += len(items)
            if count:
                counted[0] += len(items)
            for k in kinds:
                req.sent[k] = req.sent.get(k, 0) + 1

        req.status = 200
        req.sent = {}
        ended = None
        silent = False
        try:
            write(self._head(200, [("Content-Type", "application/json")], [("Transfer-Encoding", "chunked")]) + b"\r\n")
            raw = [it if isinstance(it, bytes) else go_json(it) + b"\n" for it in kw.get("raw", ())]
            if raw:
                emit(raw, ["RAW"] * len(raw), count=False)
            if initial:
                emit(initial, ["ADDED"] * len(initial))
            while ended is None:
                if self._stop.is_set():
                    ended = "stop"
                    break
                sent = counted[0]
                due = [k for k, v in limits.items() if sent >= v and not (k == "silent_after" and silent)]
                if "error_after" in due:
                    emit([go_json({"type": "ERROR", "object": error}) + b"\n"], ["ERROR"], count=False)
                    ended = "error"
                    break
                if "cut_after" in due:
                    ended = "cut"
                    break
                if "end_after" in due:
                    ended = "end"
                    break
                if "silent_after" in due:
                    silent = True
                room = min([v - sent for k, v in limits.items() if k != "silent_after" or not silent] + [512])
                batch, kinds, control = [], [], None
                with self.cond:
                    cur = self.streams[sid]
                    first = self.log[0][0] if self.log else self.seq
                    if cur < first:   # the window slid past this stream: the cacher ends it
                        ended = "end"
                        break
                    for idx in range(cur - first, len(self.log)):
                        seq, rv, kind, name, data, ctl = self.log[idx]
                        if rv is None and seq < start_seq:
                            cur = seq + 1
                            continue
                        if kind == "CTL":
                            if not silent or ctl == "cut":
                                control = ctl
                            cur = seq + 1
                            break
                        if (rv is not None and rv <= start) or silent:
                            cur = seq + 1
                            continue
                        if silent or len(batch) >= room:
                            break
                        cur = seq + 1
                        batch.append(data)
                        kinds.append(kind)
                        if ctl:
                            control = ctl
                            break
                    self.streams[sid] = cur
                    self.cond.notify_all()
                    at_end = cur == self.seq
                    bm_rv = self.rv
                    now = time.monotonic()
                    if not batch and control is None and not (next_bm and now >= next_bm and not silent) and now < end_at:
                        waits = [end_at - now, 0.5]
                        if next_bm and not silent:
                            waits.append(next_bm - now)
                        self.cond.wait(max(0.0, min(waits)))
                        continue
                if batch:
                    emit(batch, kinds)
                if control == "end":
                    ended = "end"
                elif control == "cut":
                    ended = "cut"
                elif control == "silent":
                    silent = True
                now = time.monotonic()
                if ended is None and now >= end_at:
                    ended = "silent" if silent else "timeout"
                elif ended is None and next_bm and now >= next_bm and not silent and at_end and not batch:
                    emit([go_json(bookmark_event(bm_rv)) + b"\n"], ["BOOKMARK"], count=False)
                    next_bm = now + bm_every
            if ended == "cut":   # mid-chunk and mid-event, then the connection closed
                part = b'{"type":"MODIFIED","object":{"kind":"Node","apiVersion":"v1","metadata":{"name":"cut-'
                write(b"%x\r\n" % (len(part) + 100) + part)
                req.ended = "cut"
                return False
            if ended in ("stop", "silent"):   # a silent stream never says goodbye
                req.ended = ended
                return False
            write(b"0\r\n\r\n")
            req.ended = ended
            return True
        except OSError:
            req.ended = "gone"
            raise

    # ------------------------------------------------------------ the API

    def _auth(self, req):
        if req.client_cert:
            return True
        try:
            with open(self.token_file) as f:
                want = f.read().strip()
        except OSError:
            want = None
        got = req.header("Authorization", "")
        return (bool(want) and got == "Bearer " + want) or got[len("Bearer "):] in self.tokens

    def _forbidden(self, verb, name=None):
        who = 'User "%s"' % self.username
        if name:
            msg = 'nodes "%s" is forbidden: %s cannot %s resource "nodes" in API group "" at the cluster scope' % (
                name, who, verb)
            det = {"name": name, "kind": "nodes"}
        else:
            msg = 'nodes is forbidden: %s cannot %s resource "nodes" in API group "" at the cluster scope' % (who, verb)
            det = {"kind": "nodes"}
        return Reply(403, status_body(403, "Forbidden", msg, det))

    def _not_found(self, name):
        return Reply(404, status_body(404, "NotFound", 'nodes "%s" not found' % name,
                                      {"name": name, "kind": "nodes"}))

    def _handle(self, req):
        with self.lock:
            return self._handle_locked(req)

    def _handle_locked(self, req):
        if not self._auth(req):
            return Reply(401, status_body(401, "Unauthorized", "Unauthorized"))
        if req.path.startswith(LEASES):
            return self._lease(req)
        if req.path == "/readyz" and req.method == "GET":
            return Reply(200, "ok", content_type="text/plain; charset=utf-8")
        if req.path in REVIEWS:
            return self._review(req)
        if req.path == "/api/v1/nodes":
            if req.method != "GET":
                return Reply(405, status_body(405, "MethodNotAllowed", "the server does not allow this method on the requested resource"))
            if "list" not in self.verbs:
                return self._forbidden("list")
            return self._list(req)
        m = EVENTS_PATH.match(req.path)
        if m:
            return self._event_create(req, m.group(1))
        name = req.node_name
        if name is None or "/" in name:
            return Reply(404, status_body(404, "NotFound", "the server could not find the requested resource",
                                          {}))
        verb = {"GET": "get", "PATCH": "patch", "DELETE": "delete", "PUT": "update"}.get(req.method)
        if verb is None:
            return Reply(405, status_body(405, "MethodNotAllowed", "the server does not allow this method on the requested resource"))
        if verb not in self.verbs:
            return self._forbidden(verb, name)
        n = self.nodes.get(name)
        if verb == "get":
            if n is None:
                return self._not_found(name)
            return Reply(200, self._versioned(n))
        if verb == "patch":
            return self._patch(req, name, n)
        if verb == "delete":
            return self._delete(req, name, n)
        return Reply(405, status_body(405, "MethodNotAllowed", "not supported by the stand-in"))

    def _event_create(self, req, ns):
        """POST of an events.k8s.io/v1 Event: RBAC, the body's type, validation, AlreadyExists."""
        if req.method != "POST":
            return Reply(405, status_body(405, "MethodNotAllowed", "the server does not allow this method on the requested resource"))
        if "create" not in self.event_verbs:
            return Reply(403, status_body(403, "Forbidden", 'events.events.k8s.io is forbidden: User '
                                          '"system:serviceaccount:noderecover:noderecover" cannot create resource '
                                          '"events" in API group "events.k8s.io" in the namespace "%s"' % ns,
                                          {"group": "events.k8s.io", "kind": "events"}))
        ct = (req.header("Content-Type") or "").split(";")[0].strip().lower()
        if ct != "application/json":
            return Reply(415, status_body(415, "UnsupportedMediaType", '415: Unsupported Media Type: "%s"' % ct))
        try:
            ev = json.loads(req.body.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as e:
            return Reply(400, status_body(400, "BadRequest", "error decoding Event: %s" % e))
        if not isinstance(ev, dict) or ev.get("apiVersion") != "events.k8s.io/v1" or ev.get("kind") != "Event":
            return Reply(400, status_body(400, "BadRequest", "the body is not an events.k8s.io/v1 Event"))
        name = (ev.get("metadata") or {}).get("name") if isinstance(ev.get("metadata"), dict) else None
        errs = event_errors(ev, ns)
        if errs:
            return Reply(422, status_body(422, "Invalid", 'Event.events.k8s.io "%s" is invalid: %s' % (
                name, ", ".join(errs)), {"name": name, "group": "events.k8s.io", "kind": "Event",
                                         "causes": [{"message": e} for e in errs]}))
        if any(e["metadata"]["name"] == name for e in self.posted):
            return Reply(409, status_body(409, "AlreadyExists", 'events.events.k8s.io "%s" already exists' % name,
                                          {"name": name, "group": "events.k8s.io", "kind": "events"}))
        self.rv += 1
        ev = copy.deepcopy(ev)
        ev["metadata"].update({"namespace": ns, "uid": "ev-%d" % self.rv, "resourceVersion": str(self.rv)})
        self.posted.append(ev)
        return Reply(201, ev)

    def _review(self, req):
        """SelfSubjectAccessReview and SelfSubjectReview, created (201) as kube-apiserver does:
        nothing stored, the spec echoed, the status filled in."""
        if req.method != "POST":
            return Reply(405, status_body(405, "MethodNotAllowed", "the server does not allow this method on the requested resource"))
        try:
            obj = json.loads(req.body)
        except ValueError:
            return Reply(400, status_body(400, "BadRequest", "the request body is not JSON"))
        if req.path == SSR_PATH:
            if not isinstance(obj, dict) or obj.get("kind") != "SelfSubjectReview":
                return Reply(400, status_body(400, "BadRequest", "not a SelfSubjectReview"))
            return Reply(201, {"kind": "SelfSubjectReview", "apiVersion": "authentication.k8s.io/v1",
                               "metadata": {"creationTimestamp": None},
                               "status": {"userInfo": {"username": self.username, "uid": "5b2c4e6f",
                                                      "groups": ["system:serviceaccounts", "system:authenticated"]}}})
        spec = obj.get("spec") if isinstance(obj, dict) else None
        ra = spec.get("resourceAttributes") if isinstance(spec, dict) else None
        if not isinstance(obj, dict) or (obj.get("kind"), obj.get("apiVersion")) != ("SelfSubjectAccessReview", "authorization.k8s.io/v1") \
                or not isinstance(ra, dict) or not ra.get("verb") or not ra.get("resource"):
            return Reply(422, status_body(422, "Invalid", "SelfSubjectAccessReview is invalid: spec.resourceAttributes: Invalid value"))
        verb, resource, group = ra["verb"], ra["resource"], ra.get("group", "")
        if resource == "nodes" and group == "":
            allowed = verb in self.verbs and "namespace" not in ra
        else:
            allowed = (verb, resource) not in self.review_deny
        st = {"allowed": allowed}
        if allowed:
            st["reason"] = 'RBAC: allowed by ClusterRoleBinding "noderecover" of ClusterRole "noderecover" to User "%s"' % self.username
        out = {"kind": "SelfSubjectAccessReview", "apiVersion": "authorization.k8s.io/v1",
               "metadata": {"creationTimestamp": None}, "spec": spec, "status": st}
        return Reply(201, out)

    @staticmethod
    def _versioned(n):
        out = {"kind": "Node", "apiVersion": "v1"}
        out.update(copy.deepcopy(n))
        return out

    def _list(self, req):
        q = req.query
        keys = [k for k, _ in q]
        bad = [k for k in keys if k not in ("limit", "continue", "fieldSelector")]
        if bad or len(keys) != len(set(keys)):
            return Reply(400, status_body(400, "BadRequest",
                                          "stand-in: unexpected query parameters %r" % (keys,)))
        qd = dict(q)
        limit = 0
        if "limit" in qd:
            if not qd["limit"].isdigit():
                return Reply(400, status_body(400, "BadRequest", "invalid limit %r" % qd["limit"]))
            limit = int(qd["limit"])
        names = sorted(self.nodes)
        if "fieldSelector" in qd:  # only metadata.name=NAME, as a client reading one node asks
            sel = qd["fieldSelector"]
            if not sel.startswith("metadata.name="):
                return Reply(400, status_body(400, "BadRequest", "stand-in: field selector %r" % sel))
            names = [n for n in names if n == sel[len("metadata.name="):]]
        list_rv = self.rv
        if "continue" in qd:
            if self.expire_continue > 0:
                self.expire_continue -= 1
                tok = self._token(list_rv, names[0] if names else "")
                return Reply(410, status_body(
                    410, "Expired",
                    "The provided continue parameter is too old to display a consistent list result. "
                    "You can start a new list without the continue parameter, or use the continue token "
                    "in this response to retrieve the remainder of the results. Continuing with the "
                    "provided token results in an inconsistent list - objects that were created, "
                    "modified, or deleted between the time the first chunk was returned and now may "
                    "show up in the list.", metadata={"continue": tok}))
            try:
                tok = self._untoken(qd["continue"])
                start = tok["start"]
                list_rv = tok["rv"]
            except Exception as e:  # noqa: BLE001 - any undecodable token is a 400
                return Reply(400, status_body(400, "BadRequest", "continue key is not valid: %s" % e))
            if int(list_rv) < self.compacted_rv:
                return Reply(410, status_body(
                    410, "Expired", "The provided continue parameter is too old to display a consistent "
                    "list result. You can start a new list without the continue parameter.",
                    metadata={"continue": self._token(self.rv, start)}))
            if not start.endswith("\x00"):
                return Reply(400, status_body(400, "BadRequest", "continue key is not valid"))
            names = [nm for nm in names if nm >= start[:-1] + "\x00"]
        page = names[:limit] if limit else names
        rest = names[len(page):]
        meta = {"resourceVersion": str(list_rv)}
        if rest:
            meta["continue"] = self._token(list_rv, page[-1] + "\x00")
            meta["remainingItemCount"] = len(rest)
        items = [copy.deepcopy(self.nodes[nm]) for nm in page]
        if self.metadata_last:
            body = {"kind": "NodeList", "apiVersion": "v1", "items": items, "metadata": meta}
        else:
            body = {"kind": "NodeList", "apiVersion": "v1", "metadata": meta, "items": items}
        raw = go_json(body)
        if self.pretty:
            raw = json.dumps(body, indent=4, ensure_ascii=False).encode("utf-8")
        if self.list_filter:
            raw = self.list_filter(raw)
        return Reply(200, raw, content_type="application/json")

    @staticmethod
    def _token(rv, start):
        j = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start}, separators=(",", ":"))
        return base64.urlsafe_b64encode(j.encode()).decode().rstrip("=")

    @staticmethod
    def _untoken(raw):
        """A continue token _token wrote, decoded; anything else raises."""
        return json.loads(base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)))

    def _invalid(self, name, msg, causes=None):
        return Reply(422, status_body(422, "Invalid", 'Node "%s" is invalid: %s' % (name, msg),
                                      {"name": name, "kind": "Node", "causes": causes or []}))

    def _patch(self, req, name, n):
        ct = (req.header("Content-Type") or "").split(";")[0].strip().lower()
        if ct not in ("application/json-patch+json",):
            return Reply(415, status_body(415, "UnsupportedMediaType",
                                          '415: Unsupported Media Type: "%s"' % ct))
        if n is None:
            return self._not_found(name)
        try:
            ops = json.loads(req.body.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as e:
            return Reply(400, status_body(400, "BadRequest", "error decoding patch: %s" % e))
        if not isinstance(ops, list):
            return Reply(400, status_body(400, "BadRequest",
                                          "json: cannot unmarshal object into Go value of type jsonpatch.Patch"))
        try:
            out = apply_patch(self._versioned(n), ops)
        except PatchError as e:
            # what kube-apiserver's patch handler gives for any jsonpatch Apply error: a generic
            # server response (apimachinery NewGenericServerResponse, isUnexpectedResponse
            # false), so the details carry no causes and the error's text is not sent
            return Reply(422, status_body(
                422, "Invalid", "the server rejected our request due to an error in our request", {}))
        if not isinstance(out, dict) or not isinstance(out.get("metadata"), dict):
            return self._invalid(name, "metadata: Required value")
        md = out["metadata"]
        if md.get("name") != name:
            return Reply(400, status_body(400, "BadRequest", "the name of the object (%s) does not match the name on the URL (%s)" % (md.get("name"), name)))
        if md.get("uid") != n["metadata"]["uid"]:
            return self._invalid(name, "metadata.uid: Invalid value: field is immutable")
        if md.get("resourceVersion") != n["metadata"]["resourceVersion"]:
            return Reply(409, status_body(
                409, "Conflict", 'Operation cannot be fulfilled on nodes "%s": the object has been modified; '
                'please apply your changes to the latest version and try again' % name,
                {"name": name, "kind": "nodes"}))
        for fld in ("annotations", "labels"):
            m = md.get(fld)
            if m is None:
                continue
            if not isinstance(m, dict) or any(not isinstance(v, str) for v in m.values()):
                return Reply(400, status_body(400, "BadRequest", "json: cannot unmarshal into Go struct field ObjectMeta.metadata.%s of type string" % fld))
            for k in m:
                if not k or len(k) > 316 or any(c in k for c in ' "\\~\n'):
                    return self._invalid(name, 'metadata.%s: Invalid value: "%s": name part must consist of alphanumeric characters' % (fld, k))
        spec = out.get("spec") or {}
        taints = spec.get("taints")
        if taints is not None:
            if not isinstance(taints, list):
                return Reply(400, status_body(400, "BadRequest", "json: cannot unmarshal into Go struct field NodeSpec.spec.taints of type []v1.Taint"))
            seen = set()
            for i, t in enumerate(taints):
                if not isinstance(t, dict) or not t.get("key"):
                    return self._invalid(name, "spec.taints[%d].key: Required value" % i)
                if t.get("effect") not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
                    return self._invalid(name, 'spec.taints[%d].effect: Unsupported value: "%s"' % (i, t.get("effect")))
                if "value" in t and not isinstance(t["value"], str):
                    return Reply(400, status_body(400, "BadRequest", "json: cannot unmarshal into Go struct field Taint.spec.taints.value of type string"))
                kk = (t["key"], t["effect"])
                if kk in seen:
                    return self._invalid(name, 'spec.taints[%d]: Duplicate value: "%s"' % (i, t["key"] + ":" + t["effect"]))
                seen.add(kk)
            if not taints:
                del spec["taints"]  # omitempty
        out.pop("kind", None)
        out.pop("apiVersion", None)
        dry = req.qdict().get("dryRun")
        if dry is not None and dry != "All":
            return Reply(422, status_body(422, "Invalid", 'PatchOptions.meta.k8s.io "" is invalid: dryRun: '
                                          'Unsupported value: "%s": supported values: "All"' % dry))
        if dry == "All":  # checked, answered as if stored, not stored
            out["metadata"]["resourceVersion"] = n["metadata"]["resourceVersion"]
            return Reply(200, self._versioned(out))
        self.rv += 1
        out["metadata"]["resourceVersion"] = str(self.rv)
        self.nodes[name] = out
        self._node_event("MODIFIED", out)
        return Reply(200, self._versioned(out))

    def _delete(self, req, name, n):
        opts = {}
        if req.body:
            try:
                opts = json.loads(req.body.decode("utf-8"))
            except (ValueError, UnicodeDecodeError) as e:
                return Reply(400, status_body(400, "BadRequest", "error decoding DeleteOptions: %s" % e))
            if not isinstance(opts, dict):
                return Reply(400, status_body(400, "BadRequest", "DeleteOptions is not an object"))
        if n is None:
            return self._not_found(name)
        pre = opts.get("preconditions") or {}
        md = n["metadata"]
        if "uid" in pre and pre["uid"] != md["uid"]:
            return Reply(409, status_body(
                409, "Conflict", 'Operation cannot be fulfilled on nodes "%s": Precondition failed: UID in '
                'precondition: %s, UID in object meta: %s' % (name, pre["uid"], md["uid"]),
                {"name": name, "kind": "nodes"}))
        if "resourceVersion" in pre and pre["resourceVersion"] != md["resourceVersion"]:
            return Reply(409, status_body(
                409, "Conflict", 'Operation cannot be fulfilled on nodes "%s": Precondition failed: '
                'ResourceVersion in precondition: %s, ResourceVersion in object meta: %s' % (
                    name, pre["resourceVersion"], md["resourceVersion"]),
                {"name": name, "kind": "nodes"}))
        # as kube-apiserver's handlers/delete.go: the query is read only when there is no body
        dry = opts.get("dryRun") if req.body else ([req.qdict()["dryRun"]] if "dryRun" in req.qdict() else None)
        if dry == ["All"]:
            return Reply(200, self._versioned(n))
        del self.nodes[name]
        self.rv += 1
        gone = self._versioned(n)
        ev = copy.deepcopy(n)
        ev["metadata"]["resourceVersion"] = str(self.rv)
        self._node_event("DELETED", ev)
        return Reply(200, gone)

    def lease(self, ns, name):
        with self.lock:
            return copy.deepcopy(self.leases.get((ns, name)))

    def put_lease(self, obj, mutate=None):
        """Create or replace a Lease as another client (a fence agent) would: its namespace and
        name from obj's metadata, mutate(lease) applied to the stored one when given, and the
        resourceVersion bumped either way (a renewal is a change)."""
        with self.lock:
            md = obj["metadata"]
            key = (md["namespace"], md["name"])
            cur = copy.deepcopy(obj) if mutate is None or key not in self.leases else self.leases[key]
            if mutate:
                mutate(cur)
            self.rv += 1
            cur.setdefault("apiVersion", "coordination.k8s.io/v1")
            cur.setdefault("kind", "Lease")
            cur["metadata"]["resourceVersion"] = str(self.rv)
            cur["metadata"].setdefault("uid", "lease-uid-%s" % md["name"])
            self.leases[key] = cur
            return copy.deepcopy(cur)

    def _lease(self, req):
        parts = req.path[len(LEASES):].split("/")
        if len(parts) not in (2, 3) or parts[1] != "leases" or (len(parts) == 3 and not parts[2]):
            return Reply(404, status_body(404, "NotFound", "the server could not find the requested resource", {}))
        ns, name = parts[0], parts[2] if len(parts) == 3 else None
        cur = self.leases.get((ns, name)) if name else None
        verb = {"GET": "get" if name else "list", "POST": "create", "PUT": "update", "PATCH": "patch",
                "DELETE": "delete"}.get(req.method)
        if (verb, "leases") in self.review_deny:
            return Reply(403, status_body(403, "Forbidden", 'leases.coordination.k8s.io%s is forbidden: User "%s" cannot %s '
                                          'resource "leases" in API group "coordination.k8s.io" in the namespace "%s"' % (
                                              ' "%s"' % name if name else "", self.username, verb, ns),
                                          {"group": "coordination.k8s.io", "kind": "leases"}))
        if req.method == "GET" and name:
            if cur is None:
                return Reply(404, status_body(404, "NotFound", 'leases.coordination.k8s.io "%s" not found' % name,
                                              {"name": name, "group": "coordination.k8s.io", "kind": "leases"}))
            return Reply(200, cur)
        if req.method == "GET":
            return self._lease_list(req, ns)
        if req.method == "PATCH" and name:
            return self._lease_patch(req, ns, name, cur)
        if req.method == "DELETE" and name:
            return self._lease_delete(req, ns, name, cur)
        if req.method not in ("POST", "PUT") or (req.method == "POST") != (name is None):
            return Reply(405, status_body(405, "MethodNotAllowed", "the server does not allow this method on the requested resource"))
        try:
            obj = json.loads(req.body.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as e:
            return Reply(400, status_body(400, "BadRequest", "error decoding Lease: %s" % e))
        md, spec = obj.get("metadata") or {}, obj.get("spec") or {}
        for k in ("acquireTime", "renewTime"):
            if k in spec and not (isinstance(spec[k], str) and MICROTIME.match(spec[k])):
                return Reply(400, status_body(400, "BadRequest", "Lease in version \"v1\" cannot be handled as a Lease: "
                                              "parsing time %r: not a MicroTime" % (spec[k],)))
        if obj.get("kind") != "Lease" or obj.get("apiVersion") != "coordination.k8s.io/v1" or md.get("namespace", ns) != ns:
            return Reply(400, status_body(400, "BadRequest", "not a coordination.k8s.io/v1 Lease of namespace %s" % ns))
        if req.method == "POST":
            name = md.get("name")
            if (ns, name) in self.leases:
                return Reply(409, status_body(409, "AlreadyExists", 'leases.coordination.k8s.io "%s" already exists' % name,
                                              {"name": name, "group": "coordination.k8s.io", "kind": "leases"}))
            md["uid"] = "lease-uid-%s" % name
        else:
            if md.get("name") != name:
                return Reply(400, status_body(400, "BadRequest", "the name of the object (%s) does not match the name on the URL (%s)" % (md.get("name"), name)))
            if cur is None:
                return Reply(404, status_body(404, "NotFound", 'leases.coordination.k8s.io "%s" not found' % name, {}))
            if md.get("resourceVersion") != cur["metadata"]["resourceVersion"]:
                return Reply(409, status_body(409, "Conflict", 'Operation cannot be fulfilled on leases.coordination.k8s.io "%s": '
                                              'the object has been modified; please apply your changes to the latest version and try again' % name,
                                              {"name": name, "group": "coordination.k8s.io", "kind": "leases"}))
            md["uid"] = cur["metadata"]["uid"]
        self.rv += 1
        md["resourceVersion"] = str(self.rv)
        md["namespace"] = ns
        out = {"kind": "Lease", "apiVersion": "coordination.k8s.io/v1", "metadata": md, "spec": spec}
        self.leases[(ns, name)] = out
        return Reply(201 if req.method == "POST" else 200, copy.deepcopy(out))

    def _lease_delete(self, req, ns, name, cur):
        """A Lease deleted, with DeleteOptions' preconditions (uid, resourceVersion: 409 when stale)."""
        if cur is None:
            return Reply(404, status_body(404, "NotFound", 'leases.coordination.k8s.io "%s" not found' % name,
                                          {"name": name, "group": "coordination.k8s.io", "kind": "leases"}))
        try:
            pre = (json.loads(req.body.decode("utf-8")) if req.body else {}).get("preconditions") or {}
        except (ValueError, UnicodeDecodeError, AttributeError) as e:
            return Reply(400, status_body(400, "BadRequest", "error decoding DeleteOptions: %s" % e))
        for k in ("uid", "resourceVersion"):
            if k in pre and pre[k] != cur["metadata"].get(k):
                return Reply(409, status_body(409, "Conflict", "Operation cannot be fulfilled on leases.coordination.k8s.io "
                                              '"%s": Precondition failed: %s: %s, %s: %s' % (
                                                  name, k, pre[k], k, cur["metadata"].get(k)),
                                              {"name": name, "group": "coordination.k8s.io", "kind": "leases"}))
        del self.leases[(ns, name)]
        self.rv += 1
        return Reply(200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                           "details": {"name": name, "group": "coordination.k8s.io", "kind": "leases", "uid": cur["metadata"].get("uid")}})

    def _lease_list(self, req, ns):
        """A namespace's Leases, those whose labels match an equality labelSelector (k=v,...)."""
        sel = []
        for term in filter(None, req.qdict().get("labelSelector", "").split(",")):
            k, eq, v = term.partition("=")
            if not eq or not k:
                return Reply(400, status_body(400, "BadRequest", "unable to parse requirement: %r" % term))
            sel.append((k, v.lstrip("=")))
        found = [(name, le) for (n, name), le in sorted(self.leases.items()) if n == ns and
                 all(((le["metadata"].get("labels") or {}).get(k)) == v for k, v in sel)]
        # paged as the node list is (limit, continue: the last name's successor), by name
        qd = req.qdict()
        limit = int(qd["limit"]) if qd.get("limit", "").isdigit() else 0
        if "continue" in qd:
            try:
                start = self._untoken(qd["continue"])["start"]
            except Exception as e:  # noqa: BLE001 - any undecodable token is a 400
                return Reply(400, status_body(400, "BadRequest", "continue key is not valid: %s" % e))
            found = [(name, le) for name, le in found if name >= start[:-1] + "\x00"]
        page = found[:limit] if limit else found
        meta = {"resourceVersion": str(self.rv)}
        if len(page) < len(found):
            meta["continue"] = self._token(self.rv, page[-1][0] + "\x00")
            meta["remainingItemCount"] = len(found) - len(page)
        self.lease_pages += 1
        return Reply(200, {"kind": "LeaseList", "apiVersion": "coordination.k8s.io/v1",
                           "metadata": meta, "items": [copy.deepcopy(le) for _, le in page]})

    def _lease_patch(self, req, ns, name, cur):
        """A JSON patch of a Lease, as kube-apiserver applies one (a failed test: 422, no causes)."""
        ct = (req.header("Content-Type") or "").split(";")[0].strip().lower()
        if ct != "application/json-patch+json":
            return Reply(415, status_body(415, "UnsupportedMediaType", '415: Unsupported Media Type: "%s"' % ct))
        if cur is None:
            return Reply(404, status_body(404, "NotFound", 'leases.coordination.k8s.io "%s" not found' % name,
                                          {"name": name, "group": "coordination.k8s.io", "kind": "leases"}))
        try:
            out = apply_patch(cur, json.loads(req.body.decode("utf-8")))
        except (ValueError, UnicodeDecodeError, PatchError):
            return Reply(422, status_body(422, "Invalid", "the server rejected our request due to an error in our request", {}))
        ann = out.get("metadata", {}).get("annotations") or {}
        if not isinstance(ann, dict) or any(not isinstance(v, str) for v in ann.values()):
            return Reply(400, status_body(400, "BadRequest", "json: cannot unmarshal into Go struct field ObjectMeta.metadata.annotations of type string"))
        self.rv += 1
        out["metadata"]["resourceVersion"] = str(self.rv)
        self.leases[(ns, name)] = out
        return Reply(200, copy.deepcopy(out))


# ---------------------------------------------------------------- standalone use

def main():
    """Run the stand-in by hand: python3 apiserver.py [--port-file F] (Ctrl-C to stop)."""
    import argparse
    import fixtures
    import certs
    ap = argparse.ArgumentParser()
    ap.add_argument("--certdir")
    ap.add_argument("--content-length", action="store_true")
    ap.add_argument("--seconds", type=float, default=600, help="stop after this long")
    a = ap.parse_args()
    d = a.certdir or tempfile.mkdtemp(prefix="standin-")
    if not os.path.exists(os.path.join(d, "ca.crt")):
        certs.make_certs(d)
    nodes = fixtures.etcd_servers(3) + [fixtures.node("agent-1", ready="Unknown", since=300),
                                        fixtures.node("agent-2")]
    srv = StandIn(d, nodes=nodes, chunked=not a.content_length).start()
    with open(srv.token_file) as f:
        tok = f.read()
    print("url=%s ca=%s/ca.crt token-file=%s token=%s" % (srv.url, d, srv.token_file, tok), flush=True)
    try:
        time.sleep(a.seconds)
    except KeyboardInterrupt:
        pass
    srv.stop()


if __name__ == "__main__":
    main()
