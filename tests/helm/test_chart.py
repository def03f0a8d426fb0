"""The Helm chart (deploy/helm/noderecover) against `noderecover manifests`: for a matrix of
settings, `helm template` with the settings as values must give the same objects as the binary
with them as flags, compared parsed, object by object. What "the same" means (expected()):
release noderecover in namespace noderecover with namespace.create: manifests' objects exactly,
plus Helm's own two labels (helm.sh/chart, app.kubernetes.io/managed-by) wherever manifests puts
its labels; another release R in namespace N: the same objects moved there: every namespace
noderecover is N, every object named noderecover (and the ServiceAccount, the Lease, the roles'
references) is the full name F (R, or R-noderecover when R does not hold noderecover), the
Events' Role noderecover-events is F-events, app.kubernetes.io/instance is R; the Namespace
only with namespace.create. Nothing else may differ: rules, environment, probes, lock-down.
Also: the values are the flags (same names) plus the conventional ones, each of which is
rendered where operators expect it; a setting the binary refuses the chart refuses; `helm lint
--strict` is clean; the packed .tgz is reproducible; the k3s HelmChart built from it carries
the chart and values that map to the settings. A mutated copy of the chart (a value not wired,
a rule not conditional, the namespace ignored) must fail the comparison. Never talks to a
cluster; writes only under a temporary directory (tests/e2e's TestHelm installs it for real).

    python3 test_chart.py     (run.sh sets the environment below)

NODERECOVER_BINARY           the binary under test (its image: build.sh's IMAGE)
NODERECOVER_OTHER_IMAGE_BIN  the same sources built naming another image
NODERECOVER_HELM             the helm CLI
NODERECOVER_KUBECTL          kubectl, whose `kubectl kustomize` is kustomize's build (its test
                             skipped without)
NODERECOVER_VERSION          the project's VERSION
NODERECOVER_IMAGE            the image build.sh names (the dist HelmChart carries it)
Last line: `helm: N passed, N failed, N skipped`.
"""
import base64
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.normpath(os.path.join(HERE, "..", ".."))
CHART = os.path.join(TOP, "deploy", "helm", "noderecover")
BINARY = os.environ.get("NODERECOVER_BINARY", os.path.join(TOP, "build", "noderecover"))
OTHER = os.environ.get("NODERECOVER_OTHER_IMAGE_BIN", "")
HELM = os.environ.get("NODERECOVER_HELM", "helm")
KUBECTL = os.environ.get("NODERECOVER_KUBECTL", "")
VERSION = os.environ.get("NODERECOVER_VERSION") or open(os.path.join(TOP, "VERSION")).read().strip()
IMAGE = os.environ.get("NODERECOVER_IMAGE", "ghcr.io/exadev/noderecover:" + VERSION)
DIST = os.path.join(TOP, "build", "dist")

# Flags `manifests` takes but does not pass on to the pod (README, "Running it in a pod"): where
# the cluster is, the node it runs on, the listener (always :8080), leader election (always on),
# the Lease's namespace (the pod's own), plan's output. The chart has no value for them.
NOT_PASSED = {"kubeconfig", "context", "server", "ca-file", "token-file", "tls-server-name",
              "self-node", "listen", "leader-elect", "lease-namespace", "output",
              "version", "log-format",   # no chart value yet for --log-format: extraEnv can set it
              # the fence agent's own (issue 23): its namespace (the pod's), its listener (always
              # :9466), its address (POD_IP), its secret file (the Secret's mount)
              "fence-namespace", "fence-listen", "fence-address", "fence-peer-secret-file"}
# The fence agent's flags: values under fence (--fence-after is fence.after), not top-level ones.
FENCE_AGENT_PREFIX = "fence-"
# What fence holds beside the agent's settings.
FENCE_CONVENTIONAL = {"enabled", "mode", "podAnnotations", "nodeSelector", "priorityClassName", "resources"}
# The values every chart has (issue 24), beside the settings: not flags.
CONVENTIONAL = {"image", "imagePullSecrets", "nameOverride", "fullnameOverride", "namespace", "serviceAccount", "rbac",
                "podAnnotations", "podLabels", "priorityClassName", "resources", "nodeSelector", "tolerations", "affinity",
                "extraArgs", "extraEnv", "metrics", "serviceMonitor", "podMonitor", "prometheusRule"}
# helm template's own default is Kubernetes v1.20, below the chart's kubeVersion
KUBE_VERSION = "1.36.0"
HELM_LABELS = ("helm.sh/chart", "app.kubernetes.io/managed-by")

# Flags that appeared with the watch (issue 15); rows using them are skipped while the binary
# under test does not know them, and run once it does.
NEWER = {"watch", "relist"}


def camel(flag):
    """--taint-after -> taintAfter: a value's name is its flag's."""
    head, *rest = flag.split("-")
    return head + "".join(w.capitalize() for w in rest)


def typed(v):
    """A value as a person writes it in values.yaml: 300 a number, true a boolean."""
    if re.fullmatch(r"[0-9]+", v):
        return int(v)
    if v in ("true", "false"):
        return v == "true"
    return v


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, **kw)


def env_for_binary(extra=None):
    e = {"PATH": "/usr/bin:/bin", "LANG": "C"}
    e.update(extra or {})
    return e


_manifests = {}


def manifests(flags, binary=BINARY):
    """(exit status, objects, stderr) of `noderecover manifests FLAGS` (asked once)."""
    key = (binary,) + tuple(flags)
    if key not in _manifests:
        p = run([binary, "manifests"] + flags, env=env_for_binary())
        _manifests[key] = (p.returncode, objects(p.stdout) if p.returncode == 0 else None, p.stderr)
    return _manifests[key]


def helm_template(values=None, sets=(), chart=CHART, release="noderecover", namespace="noderecover", tests=False):
    """(exit status, objects, stderr) of `helm template` with VALUES as a values file; the
    `helm test` hook left out unless TESTS."""
    with tempfile.TemporaryDirectory() as d:
        args = [HELM, "template", release, chart, "--namespace", namespace, "--kube-version", KUBE_VERSION]
        if not tests:
            args.append("--skip-tests")
        if values is not None:
            f = os.path.join(d, "values.yaml")
            with open(f, "w") as out:
                yaml.safe_dump(values, out)
            args += ["-f", f]
        for kind, kv in sets:
            args += [kind, kv]
        p = run(args, env=dict(os.environ, HOME=d, HELM_CACHE_HOME=d, HELM_CONFIG_HOME=d, HELM_DATA_HOME=d))
    return p.returncode, objects(p.stdout) if p.returncode == 0 else None, p.stderr


def objects(text):
    """The stream's objects by (apiVersion, kind, namespace, name); a repeated key is an error."""
    out = {}
    for doc in yaml.safe_load_all(text):
        if doc is None:
            continue
        meta = doc.get("metadata", {})
        key = (doc.get("apiVersion"), doc.get("kind"), meta.get("namespace"), meta.get("name"))
        if key in out:
            raise AssertionError("%s appears twice" % (key,))
        out[key] = doc
    return out


def image_values(ref):
    """An image reference as the chart's image value: repository and tag."""
    repo, tag = ref.rsplit(":", 1)
    assert "/" not in tag, ref
    return {"repository": repo, "tag": tag}


def fullname(release):
    return release if "noderecover" in release else release + "-noderecover"


def labelled(doc):
    """The label maps of an object that manifests labels: its own, and its pod template's."""
    out = [doc["metadata"].setdefault("labels", {})]
    if doc.get("kind") in ("Deployment", "DaemonSet"):
        out.append(doc["spec"]["template"]["metadata"]["labels"])
    return out


def expected(want, release="noderecover", namespace="noderecover", create_namespace=True):
    """What the chart must render for release RELEASE in NAMESPACE, given manifests' objects
    (the module's docstring says why this is "equal")."""
    full = fullname(release)
    names = {"noderecover": full, "noderecover-events": full + "-events", "noderecover-fence": full + "-fence"}

    def walk(v, key=None, parent=None):
        if isinstance(v, dict):
            return {k: walk(x, k, v) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x, key, parent) for x in v]
        if not isinstance(v, str):
            return v
        if key == "namespace" and v == "noderecover":
            return namespace
        if key == "app.kubernetes.io/instance":
            return release
        if key in ("name", "serviceAccountName", "secretName") and v in names and not (parent and "image" in parent):
            return names[v]
        if key == "value" and parent and parent.get("name") == "NODE_RECOVERY_LEASE_NAME" and v == "noderecover":
            return full
        return v

    out = {}
    for doc in want.values():
        if doc["kind"] == "Namespace":
            if not create_namespace:
                continue
            doc = dict(doc, metadata=dict(doc["metadata"], name=namespace))
        doc = walk(doc)
        for labels in labelled(doc):
            labels.update({"helm.sh/chart": "noderecover-" + VERSION, "app.kubernetes.io/managed-by": "Helm"})
        meta = doc["metadata"]
        out[(doc["apiVersion"], doc["kind"], meta.get("namespace"), meta["name"])] = doc
    return out


def first_difference(a, b, path=""):
    """Where two parsed objects first differ, as a path and the two values; None if equal."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in a or k not in b:
                return "%s.%s: %s vs %s" % (path, k, a.get(k, "(absent)"), b.get(k, "(absent)"))
            d = first_difference(a[k], b[k], "%s.%s" % (path, k))
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, "%s[%d]" % (path, i))
            if d:
                return d
        if len(a) != len(b):
            return "%s: %d items vs %d" % (path, len(a), len(b))
        return None
    if a != b or type(a) is not type(b):
        return "%s: %r vs %r" % (path, a, b)
    return None


def differences(want, got):
    """Every object that differs between two streams, one line each; [] when equal."""
    out = []
    for k in sorted(set(want) | set(got), key=str):
        if k not in got:
            out.append("%s: only in manifests" % (k,))
        elif k not in want:
            out.append("%s: only in the chart" % (k,))
        else:
            d = first_difference(want[k], got[k])
            if d:
                out.append("%s %s (manifests vs chart)" % (k, d))
    return out


def usage_flags():
    """Every flag `noderecover help` names."""
    p = run([BINARY, "help"])
    return set(re.findall(r"--([a-z][a-z-]*[a-z])", p.stdout + p.stderr))


def binary_knows(flags):
    """Whether the binary under test takes every one of these flags (the watch's are newer)."""
    for f in flags:
        if f in NEWER:
            rc, _, err = manifests(["--taint-after", "300", "--%s=%s" % (f, {"watch": "true", "relist": "600"}[f])])
            if rc != 0 and "unknown option" in err:
                return False
    return True


# The matrix: settings as flags (NAME: VALUE; VALUE None for a flag standing alone), with the
# chart's values made from them by name; `only` adds flags manifests takes but does not pass on
# (the chart must render the same without them); `values` overrides what the chart gets.
MATRIX = [
    ("defaults", {"taint-after": "300"}),
    ("pruning on", {"taint-after": "300", "prune-after": "1800"}),
    ("pruning on, another label", {"taint-after": "60", "prune-after": "61", "prune-label": "example.com/gone"}),
    ("leader election off and a Lease name", {"taint-after": "300", "lease-name": "recover.lease"},
     {"only": ["--leader-elect=false", "--lease-namespace", "elsewhere"]}),
    ("leader election on", {"taint-after": "300"}, {"only": ["--leader-elect"]}),
    ("listen", {"taint-after": "300"}, {"only": ["--listen", "127.0.0.1:9090"]}),
    ("self node, output, server", {"taint-after": "300"},
     {"only": ["--self-node", "server-0", "--output", "json", "--tls-server-name", "k3s"]}),
    ("events off", {"taint-after": "300", "events": "false"}),
    ("events on, said", {"taint-after": "300", "events": "true"}),
    ("dry run", {"taint-after": "300", "dry-run": None}, {"values": {"dryRun": "client"}}),
    ("dry run as true", {"taint-after": "300", "dry-run": "true"}),
    ("dry run as a YAML boolean", {"taint-after": "300", "dry-run": "true"}, {"values": {"dryRun": True}}),
    ("dry run none", {"taint-after": "300", "dry-run": "none"}),
    ("server dry run, pruning", {"taint-after": "300", "prune-after": "900", "dry-run": "server"}),
    ("server dry run, events off", {"taint-after": "300", "dry-run": "server", "events": "false"}),
    ("storm guard a count, cooldown", {"taint-after": "120", "max-unknown": "3", "storm-cooldown": "45"}),
    ("storm guard a percentage", {"taint-after": "120", "max-unknown": "10%"}),
    ("storm guard off", {"taint-after": "120", "max-unknown": "100%", "storm-cooldown": "0"}),
    ("storm guard a billion", {"taint-after": "120", "max-unknown": "1000000000"}),
    ("keys, poll, page size", {"taint-after": "300", "annotation": "example.com/tainted-at",
                              "exclude-label": "Keep_Me.1", "poll": "1", "page-size": "7"}),
    ("ten years", {"taint-after": "315359999", "prune-after": "315360000", "poll": "86400"}),
    ("durations", {"taint-after": "300", "prune-after": "5400", "storm-cooldown": "90", "poll": "60"},
     {"values": {"taintAfter": "5m", "pruneAfter": "1h30m", "stormCooldown": "1m30s", "poll": "1m"}}),
    ("watch off", {"taint-after": "300", "watch": "false"}),
    ("relist", {"taint-after": "300", "relist": "120"}),
    # issue 23: the fence agent, its settings under fence (the Secret is the chart's alone)
    ("fence", {"taint-after": "300", "fence": None}, {"values": {"fence": {"enabled": True}}}),
    ("fence off", {"taint-after": "300", "fence": "off"}, {"values": {"fence": {"mode": "off"}}}),
    ("fence required, min safe", {"taint-after": "300", "fence": "require", "fence-min-safe": "90"},
     {"values": {"fence": {"enabled": True, "mode": "require", "minSafe": "1m30s"}}}),
    ("fence settings", {"taint-after": "300", "fence": None, "fence-after": "10s", "fence-isolated-after": "45",
                        "fence-action": "reboot", "fence-kubelet-url": "", "fence-renew": "60", "fence-watchdog-timeout": "5"},
     {"values": {"fence": {"enabled": True, "after": "10s", "isolatedAfter": 45, "action": "reboot", "kubeletUrl": "",
                           "renew": "1m", "watchdogTimeout": 5}}}),
    ("everything", {"taint-after": "30", "prune-after": "3600", "prune-label": "a.b/c", "annotation": "a.b/d",
                    "poll": "5", "page-size": "10000", "max-unknown": "1", "storm-cooldown": "7",
                    "exclude-label": "a.b/e", "dry-run": "server", "events": "false", "lease-name": "x"},
     {"only": ["--listen", "[::1]:8081", "--leader-elect"]}),
]


# Releases and namespaces: (release, namespace, extra values). The settings rows below run in
# each; nameOverride and fullnameOverride change names as the widely used charts do.
PLACES = [
    ("noderecover", "kube-system", {}),
    ("nr-b", "team-b", {}),
    ("team-c-noderecover", "team-c", {}),
    ("default-ns", "default", {}),
]
PLACE_ROWS = ["defaults", "pruning on", "leader election off and a Lease name", "events off", "server dry run, pruning",
              "fence settings"]


def row(entry):
    name, flags = entry[0], entry[1]
    opts = entry[2] if len(entry) > 2 else {}
    args = []
    values = {}
    for f, v in flags.items():
        args += ["--" + f] if v is None else ["--%s=%s" % (f, v)]
        if v is not None and not f.startswith(FENCE_AGENT_PREFIX):
            values[camel(f)] = typed(v)
    values.update(opts.get("values", {}))
    return name, flags, args + opts.get("only", []), values


class Chart(unittest.TestCase):
    def assertSame(self, want, got, what):
        diff = differences(want, got)
        self.assertEqual(diff, [], "%s: the chart differs from manifests:\n  %s" % (what, "\n  ".join(diff)))

    def check_row(self, flags, args, values, chart=CHART, release="noderecover", namespace="noderecover", extra=None):
        """(expected, rendered): manifests ARGS moved to RELEASE and NAMESPACE, and the chart
        with VALUES (and EXTRA values: nameOverride and such) there."""
        rc, want, err = manifests(args)
        self.assertEqual(rc, 0, "manifests %s: %s" % (" ".join(args), err))
        v = dict(values, image=image_values(IMAGE_OF_BINARY), namespace={"create": True})
        v.update(extra or {})
        rc, got, err = helm_template(v, chart=chart, release=release, namespace=namespace)
        self.assertEqual(rc, 0, "helm template %s: %s" % (values, err))
        # the fence's peer secret is the chart's alone (manifests leaves it to kubectl create)
        self.secrets = {k: got.pop(k) for k in [k for k in got if k[1] == "Secret"]}
        self.assertEqual(len(self.secrets), 1 if (values.get("fence") or {}).get("enabled") else 0, sorted(self.secrets))
        return expected(want, release, namespace), got

    def test_matrix_equals_manifests(self):
        ran = 0
        for entry in MATRIX:
            name, flags, args, values = row(entry)
            with self.subTest(name):
                if not binary_knows(flags):
                    self.skipTest("%s does not take --%s yet" % (BINARY, "/--".join(sorted(NEWER & set(flags)))))
                want, got = self.check_row(flags, args, values)
                self.assertSame(want, got, name)
                ran += 1
        self.assertGreaterEqual(ran, len(MATRIX) - 2)

    def test_places_equal_manifests_moved(self):
        # other releases and namespaces: manifests' objects moved there (expected() says how)
        rows = [e for e in MATRIX if e[0] in PLACE_ROWS]
        self.assertEqual(len(rows), len(PLACE_ROWS))
        for release, namespace, extra in PLACES:
            for entry in rows:
                name, flags, args, values = row(entry)
                with self.subTest("%s: %s in %s" % (name, release, namespace)):
                    want, got = self.check_row(flags, args, values, release=release, namespace=namespace, extra=extra)
                    self.assertSame(want, got, "%s, release %s in %s" % (name, release, namespace))
                    # and nothing of it left in namespace noderecover, nor named after another release
                    if namespace != "noderecover":
                        self.assertNotIn("noderecover", {k[2] for k in got}, "an object left in namespace noderecover")

    def test_two_releases_side_by_side(self):
        # two releases in two namespaces share no object (cluster-scoped ones included) and no Lease
        a = helm_template({"taintAfter": 300}, release="noderecover", namespace="noderecover")
        b = helm_template({"taintAfter": 300, "pruneAfter": 1800}, release="nr-b", namespace="team-b")
        self.assertEqual((a[0], b[0]), (0, 0), a[2] + b[2])
        self.assertEqual(set(a[1]) & set(b[1]), set(), "objects both releases would own")
        leases = [(deployment(o)["metadata"]["namespace"], env_of(deployment(o))["NODE_RECOVERY_LEASE_NAME"]) for o in (a[1], b[1])]
        self.assertNotEqual(leases[0], leases[1])
        self.assertEqual(leases[1], ("team-b", "nr-b-noderecover"))

    def test_values_by_set_and_set_string(self):
        # --set makes numbers int64, --set-string strings: the same objects either way
        rc, want, err = manifests(["--taint-after=300", "--prune-after=1800", "--max-unknown=3", "--page-size=20"])
        self.assertEqual(rc, 0, err)
        for kind in ("--set", "--set-string"):
            sets = [(kind, "taintAfter=300"), (kind, "pruneAfter=1800"), (kind, "maxUnknown=3"), ("--set", "pageSize=20"),
                    (kind, "image.repository=" + image_values(IMAGE_OF_BINARY)["repository"]),
                    (kind, "image.tag=" + image_values(IMAGE_OF_BINARY)["tag"]), ("--set", "namespace.create=true")]
            rc, got, err = helm_template(sets=sets)
            self.assertEqual(rc, 0, err)
            self.assertSame(expected(want), got, kind)

    def test_durations_as_the_binary_takes_them(self):
        for v, seconds in (("90s", 90), ("5m", 300), ("1h30m", 5400), ("2h", 7200)):
            with self.subTest(v):
                rc, want, err = manifests(["--taint-after", v])
                if rc != 0:
                    self.skipTest("%s does not take durations yet: %s" % (BINARY, err.strip()))
                rc, got, err = helm_template({"taintAfter": v, "image": image_values(IMAGE_OF_BINARY), "namespace": {"create": True}})
                self.assertEqual(rc, 0, err)
                self.assertSame(expected(want), got, v)
                self.assertSame(expected(manifests(["--taint-after", str(seconds)])[1]), got, v)

    def test_image_name(self):
        if not OTHER:
            self.skipTest("no second binary (NODERECOVER_OTHER_IMAGE_BIN)")
        for flags in (["--taint-after", "300"], ["--taint-after", "300", "--prune-after", "301"]):
            rc, want, err = manifests(flags, binary=OTHER)
            self.assertEqual(rc, 0, err)
            image = deployment(want)["spec"]["template"]["spec"]["containers"][0]["image"]
            self.assertNotEqual(image, IMAGE_OF_BINARY, "the second binary names another image")
            values = {camel(f[2:]): typed(v) for f, v in zip(flags[::2], flags[1::2])}
            rc, got, err = helm_template(dict(values, image=image_values(image), namespace={"create": True}))
            self.assertEqual(rc, 0, err)
            self.assertSame(expected(want), got, "image %s" % image)
            # and without the value, the chart names ghcr.io/exadev/noderecover:APPVERSION
            rc, got, err = helm_template(values)
            self.assertEqual(deployment(got)["spec"]["template"]["spec"]["containers"][0]["image"],
                             "ghcr.io/exadev/noderecover:" + VERSION)

    def test_default_image_is_the_builds(self):
        with open(os.path.join(CHART, "Chart.yaml")) as f:
            c = yaml.safe_load(f)
        self.assertEqual((c["version"], c["appVersion"]), (VERSION, VERSION), "Chart.yaml against VERSION")
        if IMAGE_OF_BINARY != "ghcr.io/exadev/noderecover:" + VERSION:
            self.skipTest("the binary was built with NODERECOVER_IMAGE=%s" % IMAGE_OF_BINARY)
        rc, want, _ = manifests(["--taint-after", "300"])
        rc, got, err = helm_template({"taintAfter": 300, "namespace": {"create": True}})
        self.assertEqual(rc, 0, err)
        self.assertSame(expected(want), got, "no image value")

    def test_values_are_the_flags(self):
        with open(os.path.join(CHART, "values.yaml")) as f:
            values = yaml.safe_load(f)
        with open(os.path.join(CHART, "values.schema.json")) as f:
            schema = json.load(f)
        flags = usage_flags()
        self.assertIn("taint-after", flags, "the usage text was read")
        agent = {f for f in flags if f.startswith(FENCE_AGENT_PREFIX)}
        # fence is a value either way: the agent's switch and settings (and the watcher's mode once it has one)
        passed = {camel(f) for f in flags - NOT_PASSED - agent} | {"fence"}
        self.assertEqual(set(values["fence"]) - FENCE_CONVENTIONAL,
                         {camel(f[len(FENCE_AGENT_PREFIX):]) for f in agent - NOT_PASSED},
                         "fence in values.yaml against the fence agent's flags that manifests passes on")
        self.assertEqual(set(schema["properties"]["fence"]["properties"]), set(values["fence"]), "values.schema.json's fence")
        # the watch's settings are values already; the binary takes them once issue 15 is merged
        newer = {camel(f) for f in NEWER if not binary_knows([f])}
        self.assertEqual(set(values) - CONVENTIONAL - newer, passed,
                         "values.yaml against the flags of `noderecover help` that manifests passes on")
        self.assertLessEqual(CONVENTIONAL, set(values), "the conventional values are all in values.yaml")
        self.assertEqual(set(schema["properties"]), set(values) | {"global"}, "values.schema.json against values.yaml (and global)")
        self.assertFalse(schema.get("additionalProperties", True), "the schema refuses other values")

    def test_flags_not_passed_are_refused_as_values(self):
        for f, v in (("listen", ":9090"), ("leader-elect", "false"), ("self-node", "x"), ("lease-namespace", "x"),
                     ("kubeconfig", "/x"), ("output", "json")):
            with self.subTest(f):
                rc, _, err = helm_template({"taintAfter": 300, camel(f): v})
                self.assertNotEqual(rc, 0, "helm template took %s" % camel(f))
                self.assertIn(camel(f), err)

    def test_refused_by_both(self):
        # (flags, values): what the binary refuses with exit 2 the chart must refuse too
        bad = [
            ([], {}),
            (["--taint-after", "5x"], {"taintAfter": "5x"}),
            (["--taint-after", "-5"], {"taintAfter": -5}),
            (["--taint-after", "1.5"], {"taintAfter": 1.5}),
            (["--taint-after", "315360001"], {"taintAfter": 315360001}),
            (["--taint-after", "300", "--prune-after", "300"], {"taintAfter": 300, "pruneAfter": 300}),
            (["--taint-after", "300", "--prune-after", "299"], {"taintAfter": "5m", "pruneAfter": "4m59s"}),
            (["--taint-after", "300", "--poll", "0"], {"taintAfter": 300, "poll": 0}),
            (["--taint-after", "300", "--poll", "86401"], {"taintAfter": 300, "poll": 86401}),
            (["--taint-after", "300", "--page-size", "0"], {"taintAfter": 300, "pageSize": 0}),
            (["--taint-after", "300", "--page-size", "10001"], {"taintAfter": 300, "pageSize": 10001}),
            (["--taint-after", "300", "--max-unknown", "0"], {"taintAfter": 300, "maxUnknown": 0}),
            (["--taint-after", "300", "--max-unknown", "150%"], {"taintAfter": 300, "maxUnknown": "150%"}),
            (["--taint-after", "300", "--max-unknown", "1000000001"], {"taintAfter": 300, "maxUnknown": "1000000001"}),
            (["--taint-after", "300", "--max-unknown", "1000000001"], {"taintAfter": 300, "maxUnknown": 1000000001}),
            (["--taint-after", "300", "--max-unknown", "5%%"], {"taintAfter": 300, "maxUnknown": "5%%"}),
            (["--taint-after", "300", "--storm-cooldown", "soon"], {"taintAfter": 300, "stormCooldown": "soon"}),
            (["--taint-after", "300", "--dry-run=maybe"], {"taintAfter": 300, "dryRun": "maybe"}),
            (["--taint-after", "300", "--events=maybe"], {"taintAfter": 300, "events": "maybe"}),
            (["--taint-after", "300", "--exclude-label", "-bad"], {"taintAfter": 300, "excludeLabel": "-bad"}),
            (["--taint-after", "300", "--prune-label", "a/b/c"], {"taintAfter": 300, "pruneLabel": "a/b/c"}),
            (["--taint-after", "300", "--annotation", "x" * 64], {"taintAfter": 300, "annotation": "x" * 64}),
            (["--taint-after", "300", "--lease-name", "Bad_Name"], {"taintAfter": 300, "leaseName": "Bad_Name"}),
        ]
        for flags, values in bad:
            with self.subTest(flags=flags):
                rc, _, err = manifests(flags)
                self.assertEqual(rc, 2, "manifests %s: %s" % (flags, err))
                rc, _, err = helm_template(values)
                self.assertNotEqual(rc, 0, "helm template took %s" % values)
                # the refusal names the value
                self.assertIn(([k for k in values if k != "taintAfter"] or ["taintAfter"])[0], err)

    def test_lint_clean(self):
        with tempfile.TemporaryDirectory() as d:
            tgz = os.path.join(DIST, "noderecover-%s.tgz" % VERSION)
            for chart, sets in ((CHART, ["taintAfter=300"]), (tgz, ["taintAfter=300"]),
                                (CHART, ["taintAfter=300", "pruneAfter=1800", "dryRun=server", "events=false"])):
                args = [HELM, "lint", "--strict", chart]
                for s in sets:
                    args += ["--set", s]
                p = run(args, env=dict(os.environ, HOME=d))
                self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
                self.assertIn("0 chart(s) failed", p.stdout)
                self.assertNotRegex(p.stdout, r"\[(WARNING|ERROR)\]")

    def test_a_drifting_chart_fails(self):
        # the comparison must see each of these wrongs in some row of the matrix
        mutations = [
            ("deployment.yaml", "{{ .Values.excludeLabel | quote }}", '"github-runner.exadev.io/no-recovery"', "exclude label not wired"),
            ("rbac.yaml", '  {{- if include "noderecover.pruneAfter" . }}\n', "  {{- if true }}\n", "delete granted without pruning"),
            ("deployment.yaml", "{{- if $dryRun }}", "{{- if false }}", "dry run dropped"),
            ("rbac.yaml", '{{- if include "noderecover.eventing" . }}', '{{- if true }}', "Events granted in a dry run"),
            ("deployment.yaml", "  replicas: 2 ", "  replicas: 1 ", "one replica"),
            ("_helpers.tpl", "app.kubernetes.io/managed-by: {{ .Release.Service }}",
             "app.kubernetes.io/managed-by: {{ .Release.Service }}\napp.kubernetes.io/part-of: noderecover", "an extra label"),
            ("deployment.yaml", '  namespace: {{ include "noderecover.namespace" . }}', "  namespace: noderecover",
             "the Deployment ignores the release's namespace"),
            ("rbac.yaml", "    namespace: {{ $ns }}\n{{- if", "    namespace: noderecover\n{{- if",
             "the Lease's binding names another namespace's ServiceAccount"),
            ("_helpers.tpl", "{{- include \"noderecover.fullname\" . -}}\n{{- else -}}\n{{- .Values.leaseName -}}",
             "{{- \"noderecover\" -}}\n{{- else -}}\n{{- .Values.leaseName -}}", "two releases share a Lease"),
            ("rbac.yaml", "  name: {{ $name }}-events\n  namespace: default", "  name: {{ $name }}\n  namespace: default",
             "the Events' Role named as the Lease's"),
            ("fence.yaml", '{{- include "noderecover.fenceEnv" . | nindent 12 }}', "", "the agent's settings not wired"),
            ("rbac.yaml", '{{- if ne (include "noderecover.fenceMode" .) "off" }}', "{{- if true }}",
             "the fence Leases granted with the fence off"),
            ("fence.yaml", "      hostPID: true\n", "", "the agent without the host's PID namespace (reboot ends the container only)"),
            ("_helpers.tpl", 'app.kubernetes.io/name: {{ printf "%s-fence" (include "noderecover.name" .) }}',
             'app.kubernetes.io/name: {{ include "noderecover.name" . }}', "the agents' pods selected by the watcher's selector"),
        ]
        for fname, old, new, what in mutations:
            with self.subTest(what), tempfile.TemporaryDirectory() as d:
                chart = os.path.join(d, "noderecover")
                shutil.copytree(CHART, chart)
                path = os.path.join(chart, "templates", fname)
                with open(path) as f:
                    text = f.read()
                self.assertTrue(old in text, "the mutation %r finds %r in %s" % (what, old, fname))
                with open(path, "w") as f:
                    f.write(text.replace(old, new, 1))
                seen = []
                for entry, (release, namespace) in [(e, ("noderecover", "noderecover")) for e in MATRIX] + \
                        [(e, where[:2]) for e in MATRIX[:1] for where in PLACES]:
                    name, flags, args, values = row(entry)
                    if not binary_knows(flags):
                        continue
                    want, got = self.check_row(flags, args, values, chart=chart, release=release, namespace=namespace)
                    if differences(want, got):
                        seen.append("%s (%s in %s)" % (name, release, namespace))
                        break
                self.assertTrue(seen, "no row of the matrix saw: %s" % what)
                print("  drift %r: the comparison fails at row %r: %s" % (what, seen[0], differences(want, got)[0]))


def deployment(objs):
    """The one Deployment of a stream."""
    ds = [d for k, d in objs.items() if k[1] == "Deployment"]
    assert len(ds) == 1, "%d Deployments" % len(ds)
    return ds[0]


def env_of(d):
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in d["spec"]["template"]["spec"]["containers"][0]["env"]}


def of_kind(objs, kind):
    return [d for k, d in objs.items() if k[1] == kind]


class Conventions(unittest.TestCase):
    """The values every chart has, each where operators expect it (issue 24)."""

    def render(self, values, **kw):
        rc, objs, err = helm_template(dict({"taintAfter": 300}, **values), **kw)
        self.assertEqual(rc, 0, err)
        return objs

    def test_fence(self):
        # off by default: nothing of the agent; on: its objects, the secret made once per render
        off = self.render({})
        self.assertEqual([k for k in off if "fence" in k[3]], [])
        self.assertEqual(of_kind(off, "DaemonSet") + of_kind(off, "Secret"), [])
        secrets = []
        for _ in range(2):
            on = self.render({"fence": {"enabled": True}, "namespace": {"create": True}}, release="nr-b", namespace="team-b")
            sec = of_kind(on, "Secret")
            self.assertEqual(len(sec), 1)
            self.assertEqual(sec[0]["metadata"]["name"], "nr-b-noderecover-fence")
            value = base64.b64decode(sec[0]["data"]["peer-secret"])
            self.assertGreaterEqual(len(value), 32, "the agent wants 16 bytes at least")
            secrets.append(value)
            ds = of_kind(on, "DaemonSet")[0]
            pod = ds["spec"]["template"]["spec"]
            self.assertEqual(pod["volumes"][0]["secret"]["secretName"], "nr-b-noderecover-fence")
            self.assertTrue(pod["hostNetwork"] and pod["hostPID"])
            self.assertEqual(pod["priorityClassName"], "system-node-critical")
            ns = of_kind(on, "Namespace")[0]["metadata"]["labels"]
            self.assertEqual(ns["pod-security.kubernetes.io/enforce"], "privileged")
            # the watcher's selectors take none of the agents' pods
            sel = deployment(on)["spec"]["selector"]["matchLabels"]
            labels = pod and ds["spec"]["template"]["metadata"]["labels"]
            self.assertFalse(all(labels.get(k) == v for k, v in sel.items()))
        self.assertNotEqual(secrets[0], secrets[1], "no cluster to look up: a new secret each render")
        # the chart's own rendering keeps an existing secret: lookup's answer is rendered again
        with open(os.path.join(CHART, "templates", "fence.yaml")) as f:
            self.assertIn('lookup "v1" "Secret" $ns $name', f.read())
        # refused as the agent refuses
        for bad, what in (({"action": "bogus"}, "fence.action"), ({"action": "exec"}, "fence.exec"),
                          ({"after": "0"}, "fence.after"), ({"renew": "soon"}, "fence.renew")):
            with self.subTest(bad=bad):
                rc, _, err = helm_template({"taintAfter": 300, "fence": dict(bad, enabled=True)})
                self.assertNotEqual(rc, 0, "helm template took %s" % bad)
                self.assertIn(what.split(".")[1], err)

    def test_labels_and_selector(self):
        objs = self.render({}, release="nr-b", namespace="team-b")
        want = {"helm.sh/chart": "noderecover-" + VERSION, "app.kubernetes.io/name": "noderecover",
                "app.kubernetes.io/instance": "nr-b", "app.kubernetes.io/version": VERSION,
                "app.kubernetes.io/managed-by": "Helm"}
        for k, d in objs.items():
            for labels in labelled(d):
                self.assertEqual(labels, want, k)
        d = deployment(objs)
        # the selector never holds the version or the chart (an upgrade could not change it)
        sel = {"app.kubernetes.io/name": "noderecover", "app.kubernetes.io/instance": "nr-b"}
        self.assertEqual(d["spec"]["selector"]["matchLabels"], sel)
        term = d["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]
        self.assertEqual(term["podAffinityTerm"]["labelSelector"]["matchLabels"], sel)

    def test_namespace_only_when_asked(self):
        objs = self.render({}, namespace="ops")
        self.assertEqual(of_kind(objs, "Namespace"), [], "a Namespace without namespace.create")
        self.assertEqual({k[2] for k in objs} - {None}, {"ops", "default"})
        objs = self.render({"namespace": {"create": True}}, namespace="ops")
        ns = of_kind(objs, "Namespace")
        self.assertEqual([n["metadata"]["name"] for n in ns], ["ops"])
        self.assertEqual(ns[0]["metadata"]["labels"]["pod-security.kubernetes.io/enforce"], "restricted")
        # namespace.name: the objects there, the release elsewhere (a k3s HelmChart in kube-system)
        objs = self.render({"namespace": {"create": True, "name": "noderecover"}}, namespace="kube-system")
        self.assertEqual({k[2] for k in objs} - {None}, {"noderecover", "default"})
        self.assertEqual([n["metadata"]["name"] for n in of_kind(objs, "Namespace")], ["noderecover"])

    def test_image(self):
        pod = lambda v: deployment(self.render(v))["spec"]["template"]["spec"]
        c = pod({})["containers"][0]
        self.assertEqual((c["image"], c["imagePullPolicy"]), ("ghcr.io/exadev/noderecover:" + VERSION, "IfNotPresent"))
        c = pod({"image": {"repository": "reg.example:5000/x/nr", "tag": "v9", "pullPolicy": "Always"}})["containers"][0]
        self.assertEqual((c["image"], c["imagePullPolicy"]), ("reg.example:5000/x/nr:v9", "Always"))
        digest = "sha256:" + "ab" * 32
        c = pod({"image": {"digest": digest}})["containers"][0]
        self.assertEqual(c["image"], "ghcr.io/exadev/noderecover@" + digest)
        self.assertEqual(pod({"imagePullSecrets": [{"name": "regcred"}]})["imagePullSecrets"], [{"name": "regcred"}])
        rc, _, err = helm_template({"taintAfter": 300, "image": {"digest": "sha256:short"}})
        self.assertNotEqual(rc, 0, "a digest that is not one")

    def test_pod_values(self):
        v = {"resources": {"requests": {"cpu": "50m", "memory": "8Mi"}, "limits": {"memory": "32Mi"}},
             "nodeSelector": {"kubernetes.io/os": "linux"},
             "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "ops", "effect": "NoSchedule"}],
             "affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                 {"weight": 1, "podAffinityTerm": {"topologyKey": "zone", "labelSelector": {"matchLabels": {"a": "b"}}}}]}},
             "priorityClassName": "system-cluster-critical", "podAnnotations": {"a.example/x": "1"},
             "podLabels": {"team": "ops"}, "extraArgs": ["--log-format", "json"],
             "extraEnv": [{"name": "TZ", "value": "UTC"}]}
        d = deployment(self.render(v))
        pod = d["spec"]["template"]["spec"]
        c = pod["containers"][0]
        self.assertEqual(c["resources"], v["resources"])
        self.assertEqual(pod["nodeSelector"], v["nodeSelector"])
        self.assertEqual(pod["tolerations"][-1], v["tolerations"][0])
        self.assertEqual([t["key"] for t in pod["tolerations"][:-1]], ["node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready"],
                         "the chart's own tolerations kept")
        self.assertIn("podAntiAffinity", pod["affinity"], "the chart's own spread kept")
        self.assertEqual(pod["affinity"]["podAffinity"], v["affinity"]["podAffinity"])
        self.assertEqual(pod["priorityClassName"], "system-cluster-critical")
        self.assertEqual(d["spec"]["template"]["metadata"]["annotations"], v["podAnnotations"])
        self.assertEqual(d["spec"]["template"]["metadata"]["labels"]["team"], "ops")
        self.assertNotIn("team", d["spec"]["selector"]["matchLabels"], "podLabels never select")
        self.assertEqual(c["args"], ["run", "--page-size", "500", "--log-format", "json"])
        self.assertEqual(c["env"][-1], {"name": "TZ", "value": "UTC"})

    def test_pruning_keeps_its_pin(self):
        # must-fail: with pruning the token may delete any node; a nodeAffinity of the values
        # would replace the control-plane pin, so it is refused, while a nodeSelector narrows it
        rc, _, err = helm_template({"taintAfter": 300, "pruneAfter": 1800, "affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]}]}}}})
        self.assertNotEqual(rc, 0, "a nodeAffinity replaced the control-plane pin")
        self.assertIn("affinity.nodeAffinity", err)
        pod = deployment(self.render({"pruneAfter": 1800, "nodeSelector": {"kubernetes.io/os": "linux"},
                                      "affinity": {"podAntiAffinity": {}}}))["spec"]["template"]["spec"]
        terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        self.assertEqual(terms, [{"matchExpressions": [{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists"}]}])
        self.assertIn("node-role.kubernetes.io/control-plane", [t["key"] for t in pod["tolerations"]])

    def test_names(self):
        objs = self.render({"nameOverride": "recover"}, release="ops")
        d = deployment(objs)
        self.assertEqual(d["metadata"]["name"], "ops-recover")
        self.assertEqual(d["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"], "recover")
        objs = self.render({"fullnameOverride": "nr"}, release="ops")
        self.assertEqual({k[3] for k in objs if k[1] != "Namespace"}, {"nr", "nr-events"})
        self.assertEqual(env_of(deployment(objs))["NODE_RECOVERY_LEASE_NAME"], "nr")
        # global: a parent chart's values pass the schema
        self.render({"global": {"imageRegistry": "x"}})

    def test_service_account_and_rbac(self):
        objs = self.render({"serviceAccount": {"annotations": {"eks.amazonaws.com/role-arn": "arn:x"}}})
        sa = of_kind(objs, "ServiceAccount")[0]
        self.assertEqual(sa["metadata"]["annotations"], {"eks.amazonaws.com/role-arn": "arn:x"})
        objs = self.render({"serviceAccount": {"create": False, "name": "given"}})
        self.assertEqual(of_kind(objs, "ServiceAccount"), [])
        self.assertEqual(deployment(objs)["spec"]["template"]["spec"]["serviceAccountName"], "given")
        for k in ("ClusterRoleBinding", "RoleBinding"):
            for b in of_kind(objs, k):
                self.assertEqual(b["subjects"], [{"kind": "ServiceAccount", "name": "given", "namespace": "noderecover"}])
        objs = self.render({"rbac": {"create": False}})
        self.assertEqual([k for k in objs if k[0].startswith("rbac.")], [], "rbac.create false: no grant")
        self.assertEqual(len(of_kind(objs, "Deployment")), 1)

    def test_scraping_and_rules_toggles(self):
        objs = self.render({})
        for kind in ("Service", "ServiceMonitor", "PodMonitor", "PrometheusRule"):
            self.assertEqual(of_kind(objs, kind), [], "%s is off by default" % kind)
        objs = self.render({"metrics": {"service": {"enabled": True}}})
        svc = of_kind(objs, "Service")[0]
        self.assertEqual(svc["spec"]["ports"], [{"name": "metrics", "port": 8080, "targetPort": "metrics", "protocol": "TCP"}])
        self.assertEqual(svc["spec"]["selector"], deployment(objs)["spec"]["selector"]["matchLabels"])
        objs = self.render({"serviceMonitor": {"enabled": True, "labels": {"release": "kps"}, "interval": "30s"}},
                           release="nr-b", namespace="team-b")
        sm = of_kind(objs, "ServiceMonitor")[0]
        self.assertEqual(len(of_kind(objs, "Service")), 1, "a ServiceMonitor brings its Service")
        self.assertEqual(sm["metadata"]["labels"]["release"], "kps")
        self.assertEqual(sm["spec"]["jobLabel"], "app.kubernetes.io/name")
        self.assertEqual(sm["spec"]["namespaceSelector"], {"matchNames": ["team-b"]})
        self.assertEqual(sm["spec"]["endpoints"], [{"port": "metrics", "path": "/metrics", "interval": "30s"}])
        objs = self.render({"podMonitor": {"enabled": True}})
        pm = of_kind(objs, "PodMonitor")[0]
        self.assertEqual(of_kind(objs, "Service"), [])
        self.assertEqual(pm["spec"]["podMetricsEndpoints"], [{"port": "metrics", "path": "/metrics"}])
        self.assertEqual(pm["spec"]["selector"]["matchLabels"], deployment(objs)["spec"]["selector"]["matchLabels"])
        objs = self.render({"prometheusRule": {"enabled": True, "labels": {"release": "kps"}}})
        pr = of_kind(objs, "PrometheusRule")[0]
        with open(os.path.join(TOP, "deploy", "prometheus", "noderecover.rules.yaml")) as f:
            self.assertEqual(pr["spec"], yaml.safe_load(f), "the chart's PrometheusRule holds deploy/prometheus's rules")
        self.assertEqual(pr["metadata"]["labels"]["release"], "kps")
        with open(os.path.join(TOP, "deploy", "prometheus", "noderecover.rules.yaml"), "rb") as a, \
                open(os.path.join(CHART, "files", "noderecover.rules.yaml"), "rb") as b:
            self.assertEqual(a.read(), b.read(), "the chart's copy of the rules: run sh deploy/prometheus/make.sh")
        # the job NoderecoverDown asks for follows the name the monitors give the job
        pr = of_kind(self.render({"prometheusRule": {"enabled": True}, "nameOverride": "recover"}), "PrometheusRule")[0]
        down = [r for g in pr["spec"]["groups"] for r in g["rules"] if r.get("alert") == "NoderecoverDown"]
        self.assertEqual(len(down), 1)
        self.assertIn('job="recover"', down[0]["expr"])
        self.assertEqual(down[0]["labels"]["job"], "recover")

    def test_helm_test_hook(self):
        rc, objs, err = helm_template({"taintAfter": "5m", "pruneAfter": 1800}, tests=True, release="nr-b", namespace="team-b")
        self.assertEqual(rc, 0, err)
        pods = of_kind(objs, "Pod")
        self.assertEqual(len(pods), 1)
        pod = pods[0]
        self.assertEqual(pod["metadata"]["annotations"]["helm.sh/hook"], "test")
        spec = pod["spec"]
        self.assertEqual((spec["serviceAccountName"], pod["metadata"]["namespace"]), ("nr-b-noderecover", "team-b"))
        c = spec["containers"][0]
        self.assertEqual(c["image"], deployment(objs)["spec"]["template"]["spec"]["containers"][0]["image"])
        self.assertEqual(c["args"][:5], ["plan", "--taint-after", "300", "--prune-after", "1800"])
        self.assertTrue(c["securityContext"]["readOnlyRootFilesystem"])
        # and the binary takes those settings (checked as plan checks them)
        p = run([BINARY, "manifests"] + c["args"][1:], env=env_for_binary())
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_chart_files(self):
        for f in ("README.md", os.path.join("templates", "NOTES.txt")):
            self.assertTrue(os.path.isfile(os.path.join(CHART, f)), f)
        with open(os.path.join(CHART, "README.md")) as f:
            readme = f.read()
        with open(os.path.join(CHART, "values.yaml")) as f:
            values = yaml.safe_load(f)

        def keys(d, prefix=""):
            for k, v in d.items():
                if isinstance(v, dict) and v and k != "resources":
                    yield from keys(v, prefix + k + ".")
                else:
                    yield prefix + k
        missing = [k for k in keys(values) if "`%s`" % k not in readme]
        self.assertEqual(missing, [], "values the chart's README does not name")
        with open(os.path.join(CHART, "Chart.yaml")) as f:
            self.assertIn("kubeVersion", yaml.safe_load(f))


class Kustomize(unittest.TestCase):
    """deploy/ under a kustomize overlay that sets one namespace for all (issue 24: two Roles of
    one name made that an ID conflict), built as `kubectl apply -k` builds it: `kubectl
    kustomize`, the kustomize kubectl carries (v5.8.1 in kubectl v1.36)."""

    def build(self, resources, extra=""):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "kustomization.yaml"), "w") as f:
                # kustomize takes no absolute path: each relative to the overlay
                f.write("namespace: ops\nresources:\n%s%s" % ("".join("  - %s\n" % os.path.relpath(r, d) for r in resources), extra))
            return run([KUBECTL, "kustomize", d], env=dict(os.environ, HOME=d))

    def test_overlay_namespace(self):
        if not KUBECTL:
            self.skipTest("no kubectl (NODERECOVER_KUBECTL)")
        deploy = os.path.join(TOP, "deploy")
        for what, res in (("deploy/ (kubectl apply -k)", [deploy]),):
            p = self.build(res)
            self.assertEqual(p.returncode, 0, "%s under namespace: ops: %s" % (what, p.stderr))
            objs = objects(p.stdout)
            self.assertEqual({k[2] for k in objs} - {None}, {"ops"}, "every namespaced object in ops")
            self.assertEqual(sorted(k[3] for k in objs if k[1] == "Role"), ["noderecover", "noderecover-events"])
            for k, d in objs.items():
                for sub in d.get("subjects", []):
                    self.assertEqual(sub["namespace"], "ops", "%s's subject follows the ServiceAccount" % (k,))
        with tempfile.TemporaryDirectory() as d:
            # the pruning file too, and (must-fail) the Events' Role named as the Lease's again
            prune = os.path.join(d, "prune.yaml")
            shutil.copy(os.path.join(deploy, "noderecover-prune.yaml"), prune)
            os.mkdir(os.path.join(d, "base"))
            with open(os.path.join(d, "base", "kustomization.yaml"), "w") as f:
                f.write("resources:\n  - prune.yaml\n")
            os.rename(prune, os.path.join(d, "base", "prune.yaml"))
            p = self.build([os.path.join(d, "base")])
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(os.path.join(d, "base", "prune.yaml")) as f:
                text = f.read()
            with open(os.path.join(d, "base", "prune.yaml"), "w") as f:
                f.write(text.replace("name: noderecover-events", "name: noderecover"))
            p = self.build([os.path.join(d, "base")])
            self.assertNotEqual(p.returncode, 0, "two Roles of one name built under one namespace")
            self.assertIn("ID conflict", p.stderr)
        with tempfile.TemporaryDirectory() as d:
            # the fence agent's file (issue 23): its objects follow to ops, the binding's subject too
            os.mkdir(os.path.join(d, "base"))
            shutil.copy(os.path.join(deploy, "noderecover-fence.yaml"), os.path.join(d, "base", "fence.yaml"))
            with open(os.path.join(d, "base", "kustomization.yaml"), "w") as f:
                f.write("resources:\n  - fence.yaml\n")
            p = self.build([os.path.join(d, "base")])
            self.assertEqual(p.returncode, 0, p.stderr)
            objs = objects(p.stdout)
            self.assertEqual({k[2] for k in objs} - {None}, {"ops"})
            self.assertEqual(sorted(k[3] for k in objs if k[1] == "Role"), ["noderecover", "noderecover-events", "noderecover-fence"])
            self.assertEqual([k for k in objs if k[1] == "DaemonSet"], [("apps/v1", "DaemonSet", "ops", "noderecover-fence")])
            for k, d2 in objs.items():
                for sub in d2.get("subjects", []):
                    self.assertEqual(sub["namespace"], "ops", "%s's subject follows the ServiceAccount" % (k,))


class Package(unittest.TestCase):
    """The reproducible .tgz and the k3s HelmChart `./build.sh chart` (and dist) write."""
    tgz = os.path.join(DIST, "noderecover-%s.tgz" % VERSION)
    helmchart = os.path.join(DIST, "noderecover-%s-helmchart.yaml" % VERSION)

    def test_tgz_holds_the_chart(self):
        with tarfile.open(self.tgz) as t:
            members = {m.name: m for m in t.getmembers()}
            files = {n: t.extractfile(m).read() for n, m in members.items() if m.isfile()}
        want = {}
        for root, _, names in os.walk(CHART):
            for n in names:
                p = os.path.join(root, n)
                with open(p, "rb") as f:
                    want["noderecover/" + os.path.relpath(p, CHART)] = f.read()
        self.assertEqual(files, want, "the .tgz holds exactly the chart's files")
        for m in members.values():
            self.assertEqual((m.mtime, m.uid, m.gid), (0, 0, 0), m.name)
        rc, got, err = helm_template({"taintAfter": 300}, chart=self.tgz)
        self.assertEqual(rc, 0, err)
        rc, got, err = helm_template({"taintAfter": 300}, chart=self.tgz, tests=True)
        self.assertEqual(rc, 0, err)
        self.assertEqual(len(of_kind(got, "Pod")), 1, "the .tgz holds the helm test hook")

    def test_tgz_reproducible(self):
        # packed again from a copy at another path, under another umask, with other times
        with tempfile.TemporaryDirectory() as d:
            for f in ("build.sh", "VERSION"):
                shutil.copy(os.path.join(TOP, f), d)
            shutil.copytree(os.path.join(TOP, "deploy", "helm"), os.path.join(d, "deploy", "helm"))
            for root, dirs, names in os.walk(os.path.join(d, "deploy")):
                for n in dirs + names:
                    os.utime(os.path.join(root, n), (1700000000, 1700000000))
                    os.chmod(os.path.join(root, n), 0o700 if n in dirs else 0o600)
            p = run(["sh", "-c", "umask 077 && NODERECOVER_IMAGE=%s sh build.sh chart" % IMAGE], cwd=d)
            self.assertEqual(p.returncode, 0, p.stderr)
            for name in (self.tgz, self.helmchart):
                with open(name, "rb") as a, open(os.path.join(d, "build", "dist", os.path.basename(name)), "rb") as b:
                    self.assertEqual(hashlib.sha256(a.read()).hexdigest(), hashlib.sha256(b.read()).hexdigest(),
                                     "%s rebuilt elsewhere differs" % os.path.basename(name))

    def test_helmchart_carries_chart_and_settings(self):
        with open(self.helmchart) as f:
            hc = yaml.safe_load(f)
        self.assertEqual((hc["apiVersion"], hc["kind"]), ("helm.cattle.io/v1", "HelmChart"))
        self.assertEqual(hc["metadata"], {"name": "noderecover", "namespace": "kube-system"})
        spec = hc["spec"]
        self.assertEqual(set(spec), {"targetNamespace", "chartContent", "valuesContent"})
        with open(self.tgz, "rb") as f:
            self.assertEqual(base64.b64decode(spec["chartContent"], validate=True), f.read(),
                             "chartContent decodes to the chart's .tgz")
        values = yaml.safe_load(spec["valuesContent"])
        with open(os.path.join(CHART, "values.yaml")) as f:
            defaults = yaml.safe_load(f)
        self.assertEqual(set(values), set(defaults), "every value, named as in the chart")
        self.assertEqual({k: v for k, v in values.items() if v != defaults[k]},
                         {"taintAfter": 300, "image": dict(defaults["image"], **image_values(IMAGE)),
                          "namespace": {"create": True, "name": "noderecover"}},
                         "the HelmChart's values: taintAfter, the build's image, and the objects in namespace noderecover")
        # the values map to settings: the flags named after them give the same objects
        flags = []
        for k, v in values.items():
            flag = re.sub(r"[A-Z]", lambda m: "-" + m.group(0).lower(), k)
            self.assertEqual(camel(flag), k)
            # fence: the agent's switch and settings (off here), no flag of the watcher's yet
            if k not in CONVENTIONAL and k != "fence" and str(v) != "" and binary_knows([flag]):
                flags.append("--%s=%s" % (flag, str(v).lower() if isinstance(v, bool) else v))
        rc, want, err = manifests(flags)
        self.assertEqual(rc, 0, err)
        if IMAGE_OF_BINARY != IMAGE:
            self.skipTest("the binary names %s, the HelmChart %s" % (IMAGE_OF_BINARY, IMAGE))
        with tempfile.TemporaryDirectory() as d:
            tgz = os.path.join(d, "chart.tgz")
            with open(tgz, "wb") as f:
                f.write(base64.b64decode(spec["chartContent"]))
            vf = os.path.join(d, "values.yaml")
            with open(vf, "w") as f:
                f.write(spec["valuesContent"])
            p = run([HELM, "template", hc["metadata"]["name"], tgz, "-f", vf, "--namespace", spec["targetNamespace"],
                     "--kube-version", KUBE_VERSION, "--skip-tests"], env=dict(os.environ, HOME=d))
        self.assertEqual(p.returncode, 0, p.stderr)
        diff = differences(expected(want), objects(p.stdout))
        self.assertEqual(diff, [], "the HelmChart's chart and values against manifests %s" % " ".join(flags))


def image_of(binary):
    rc, objs, err = manifests(["--taint-after", "300"], binary=binary)
    if rc != 0:
        raise SystemExit("helm: %s manifests failed: %s" % (binary, err))
    return deployment(objs)["spec"]["template"]["spec"]["containers"][0]["image"]


IMAGE_OF_BINARY = None


class Result(unittest.TextTestResult):
    """Counts each passing subtest (a row of the matrix, a refusal) as one pass, and a test
    without subtests as one."""
    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.passed = 0
        self.with_subtests = set()

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        self.with_subtests.add(test.id())
        if err is None:
            self.passed += 1

    def addSuccess(self, test):
        super().addSuccess(test)
        if test.id() not in self.with_subtests:
            self.passed += 1


def main():
    global IMAGE_OF_BINARY
    IMAGE_OF_BINARY = image_of(BINARY)
    suite = unittest.TestLoader().loadTestsFromModule(sys.modules[__name__])
    runner = unittest.TextTestRunner(stream=sys.stdout, verbosity=2, resultclass=Result)
    res = runner.run(suite)
    failed = len(res.failures) + len(res.errors) + len(res.unexpectedSuccesses)
    print("helm: %d passed, %d failed, %d skipped" % (res.passed, failed, len(res.skipped)))
    return 0 if failed == 0 and res.passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
