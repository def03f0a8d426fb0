"""`noderecover manifests`: the YAML it prints for the settings given, what deploy/ holds, and
refusals identical to run's (exit 2, the same line, nothing on stdout). No server is needed:
manifests never connects."""
import os
import re
import subprocess
import unittest

from harness import BINARY, Case

DEPLOY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "deploy")
# deploy/ is generated with these; build.sh deploy writes it again
GENERATED = {"noderecover.yaml": ["--taint-after", "300"],
             "noderecover-prune.yaml": ["--taint-after", "300", "--prune-after", "1800"],
             "noderecover-fence.yaml": ["--taint-after", "300", "--fence"]}
IMAGE_LINE = re.compile(r'^(\s+image: ).*$', re.M)
VERSION_LABEL = re.compile(r'(app\.kubernetes\.io/version: )"[^"]*"')


def without_image(text):
    # the image is build.sh's NODERECOVER_IMAGE, which a build may override; the version label
    # is the build's version, which the sanitizer build names VERSION-asan
    return VERSION_LABEL.sub(r"\1VERSION", IMAGE_LINE.sub(r"\1IMAGE", text))


class Manifests(Case):
    def run_bin(self, *args, env=None):
        e = {"PATH": "/usr/bin:/bin", "LANG": "C"}
        e.update(env or {})
        p = subprocess.run([BINARY] + list(args), capture_output=True, env=e, timeout=20,
                           stdin=subprocess.DEVNULL)
        return p.returncode, p.stdout.decode(), p.stderr.decode()

    def manifests(self, *args, env=None):
        rc, out, err = self.run_bin("manifests", *args, env=env)
        self.assertEqual((rc, err), (0, ""), "manifests %s" % " ".join(args))
        return out

    def docs(self, out):
        return [d for d in out.split("\n---\n")[1:]]

    def doc(self, out, kind, namespace=None):
        got = [d for d in self.docs(out) if re.search(r"^kind: %s$" % kind, d, re.M)
               and (namespace is None or re.search(r"^  namespace: %s$" % namespace, d, re.M))]
        self.assertEqual(len(got), 1, "one %s in\n%s" % (kind, out))
        return got[0]

    def test_deploy_is_the_output_of_manifests(self):
        for name, args in GENERATED.items():
            with open(os.path.join(DEPLOY, name)) as f:
                want = f.read()
            self.assertEqual(without_image(want), without_image(self.manifests(*args)),
                             "deploy/%s differs from `noderecover manifests %s`: run ./build.sh deploy"
                             % (name, " ".join(args)))

    def test_kustomization_applies_the_default(self):
        with open(os.path.join(DEPLOY, "kustomization.yaml")) as f:
            k = f.read()
        self.assertRegex(k, r"(?m)^resources:\n")
        self.assertEqual(re.findall(r"(?m)^  - (\S+)$", k), ["noderecover.yaml"], "pruning off by default")

    def test_objects_in_order(self):
        kinds = [re.search(r"^kind: (\S+)$", d, re.M).group(1) for d in self.docs(self.manifests("--taint-after", "300"))]
        # the Lease's Role in its own namespace, the Events' in default
        self.assertEqual(kinds, ["Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
                                 "Role", "RoleBinding", "Deployment"])

    def test_lease_role_in_its_namespace_only(self):
        for args in (("--taint-after", "300"), ("--taint-after", "300", "--prune-after", "301")):
            out = self.manifests(*args)
            role = self.doc(out, "Role", "noderecover")
            self.assertIn("namespace: noderecover", role)
            # the election's Lease, and the fence Leases (issue 23: --fence prefer by default)
            self.assertEqual(re.findall(r"apiGroups: \[(.*)\]", role), ['"coordination.k8s.io"'] * 2)
            self.assertEqual(re.findall(r"resources: \[(.*)\]", role), ['"leases"'] * 2)
            self.assertEqual(re.findall(r"verbs: \[(.*)\]", role), ['"get", "create", "update"', '"get", "list", "patch"'])
            self.assertNotIn("leases", self.doc(out, "ClusterRole"))
            self.assertIn("kind: Role\n  name: noderecover", self.doc(out, "RoleBinding", "noderecover"))

    def test_events_granted_in_default_only(self):
        on = self.manifests("--taint-after", "300")
        role = self.doc(on, "Role", "default")
        self.assertEqual(re.findall(r'apiGroups: \[(.*)\]\n\s+resources: \[(.*)\]\n\s+verbs: \[(.*)\]', role),
                         [('"events.k8s.io"', '"events"', '"create"')])
        self.assertIn("\n  name: noderecover-events\n", role)
        binding = self.doc(on, "RoleBinding", "default")
        self.assertIn("\n  name: noderecover-events\n", binding)
        self.assertIn("kind: Role\n  name: noderecover-events\n", binding)
        self.assertIn("  - kind: ServiceAccount\n    name: noderecover\n    namespace: noderecover", binding)
        self.assertNotIn("events", self.doc(on, "ClusterRole"))
        self.assertNotIn("NODE_RECOVERY_EVENTS", on)
        # off, and in either dry run (an Event is a write): no Role at all
        for args, env in ((["--events=false"], {}), ([], {"NODE_RECOVERY_EVENTS": "false"}),
                          (["--dry-run"], {}), (["--dry-run=server"], {})):
            with self.subTest(args=args, env=env):
                out = self.manifests("--taint-after", "300", *args, env=env)
                self.assertNotRegex(out, r"(?m)^  namespace: default$")
                self.assertNotIn("events", re.sub(r"(?m)^#.*$", "", out).replace("NODE_RECOVERY_EVENTS", ""))
        out = self.manifests("--taint-after", "300", "--events=false")
        self.assertIn('- name: NODE_RECOVERY_EVENTS\n              value: "false"', out)

    def test_one_namespace_for_all_keeps_names_apart(self):
        # A kustomize overlay's `namespace:` puts every namespaced object in one namespace; two
        # of one kind and name there are an ID conflict and the build fails (issue 24: the
        # Lease's Role and the Events' Role were both noderecover).
        for args in (("--taint-after", "300"), ("--taint-after", "300", "--prune-after", "1800")):
            seen = {}
            for d in self.docs(self.manifests(*args)):
                kind = re.search(r"^kind: (\S+)$", d, re.M).group(1)
                name = re.search(r"^  name: (\S+)$", d, re.M).group(1)
                if re.search(r"^  namespace: ", d, re.M):
                    self.assertNotIn((kind, name), seen, "%s %s twice: a kustomize namespace: overlay fails" % (kind, name))
                    seen[(kind, name)] = 1
            self.assertEqual(sorted(seen), [("Deployment", "noderecover"), ("Role", "noderecover"), ("Role", "noderecover-events"),
                                            ("RoleBinding", "noderecover"), ("RoleBinding", "noderecover-events"),
                                            ("ServiceAccount", "noderecover")])

    def test_delete_only_with_pruning(self):
        off = self.doc(self.manifests("--taint-after", "300"), "ClusterRole")
        on = self.doc(self.manifests("--taint-after", "300", "--prune-after", "301"), "ClusterRole")
        self.assertNotIn("delete", off)
        self.assertEqual(re.findall(r"verbs: \[(.*)\]", off), ['"get", "list", "watch", "patch"'])
        self.assertEqual(re.findall(r"verbs: \[(.*)\]", on), ['"get", "list", "watch", "patch"', '"delete"'])
        for d in (off, on):
            self.assertNotRegex(d, r"\*|pods|secrets|create|update")

    def test_pinned_to_control_plane_only_with_pruning(self):
        off = self.doc(self.manifests("--taint-after", "300"), "Deployment")
        on = self.doc(self.manifests("--taint-after", "300", "--prune-after", "301"), "Deployment")
        self.assertNotIn("control-plane", off)
        self.assertIn("nodeAffinity", on)
        self.assertIn("- key: node-role.kubernetes.io/control-plane\n                    operator: Exists", on)
        for d in (off, on):
            self.assertEqual(d.count("tolerationSeconds: 10"), 2)

    def test_pod_locked_down(self):
        d = self.doc(self.manifests("--taint-after", "300"), "Deployment")
        for want in ("runAsNonRoot: true", "runAsUser: 65532", "runAsGroup: 65532", "type: RuntimeDefault",
                     "allowPrivilegeEscalation: false", "readOnlyRootFilesystem: true", 'drop: ["ALL"]',
                     "memory: 16Mi", "replicas: 2", "fieldPath: spec.nodeName", "fieldPath: metadata.name",
                     "name: NODE_RECOVERY_LEADER_ELECT\n              value: \"true\""):
            self.assertIn(want, d)
        self.assertNotIn("64Mi", d)

    def test_settings_from_flags_and_environment_become_the_pods_environment(self):
        out = self.manifests("--taint-after", "120", "--prune-after", "900", "--annotation", "example.com/oos",
                             "--page-size", "50", "--max-unknown", "7", "--dry-run=server", "--listen", "127.0.0.1:9000",
                             env={"NODE_RECOVERY_POLL_SECONDS": "7", "NODE_RECOVERY_PRUNE_LABEL": "example.com/gone",
                                  "NODE_RECOVERY_AFTER_SECONDS": "999", "NODE_RECOVERY_EXCLUDE_LABEL": "example.com/keep",
                                  "NODE_RECOVERY_STORM_COOLDOWN": "45"})
        env = dict(re.findall(r'- name: (\w+)\n\s+value: "([^"]*)"', out))
        self.assertEqual(env, {"NODE_RECOVERY_AFTER_SECONDS": "120", "NODE_RECOVERY_PRUNE_AFTER_SECONDS": "900",
                               "NODE_RECOVERY_PRUNE_LABEL": "example.com/gone", "NODE_RECOVERY_POLL_SECONDS": "7",
                               "NODE_RECOVERY_ANNOTATION": "example.com/oos", "NODE_RECOVERY_MAX_UNKNOWN": "7",
                               "NODE_RECOVERY_STORM_COOLDOWN": "45", "NODE_RECOVERY_EXCLUDE_LABEL": "example.com/keep",
                               "NODE_RECOVERY_DRY_RUN": "server", "NODE_RECOVERY_LEADER_ELECT": "true",
                               "NODE_RECOVERY_LEASE_NAME": "noderecover", "NODE_RECOVERY_LISTEN": ":8080"})
        self.assertIn('args: ["run", "--page-size", "50"]', out)
        self.assertIn("taint after 120s, pruning on", out)

    def test_port_and_probes(self):
        # the pod listens on :8080 whatever --listen said here: the probes and a scrape reach it there
        out = self.manifests("--taint-after", "300", "--listen", "127.0.0.1:9000")
        self.assertNotIn("9000", out)
        for want in ("            - name: metrics\n              containerPort: 8080\n              protocol: TCP\n",
                     "          livenessProbe:\n            httpGet:\n              path: /livez\n              port: metrics\n",
                     "          readinessProbe:\n            httpGet:\n              path: /readyz\n              port: metrics\n",
                     '            - name: NODE_RECOVERY_LISTEN\n              value: ":8080"\n'):
            self.assertIn(want, out)

    def test_where_the_cluster_is_never_reaches_the_pod(self):
        # the pod uses its service account: a kubeconfig or token file here means nothing there
        out = self.manifests("--taint-after", "300", "--self-node", "laptop", env={"KUBECONFIG": "/root/.kube/config"})
        self.assertNotIn("laptop", out)
        self.assertNotIn("KUBECONFIG", out)
        self.assertNotIn("/root", out)

    def test_fence_objects(self):
        # issue 23: the agent's ServiceAccount, Role and binding, and DaemonSet after the watcher's
        out = self.manifests("--taint-after", "300", "--fence")
        kinds = [(re.search(r"^kind: (\S+)$", d, re.M).group(1), re.search(r"^  name: (\S+)$", d, re.M).group(1))
                 for d in self.docs(out)]
        self.assertEqual(kinds, [("Namespace", "noderecover"), ("ServiceAccount", "noderecover"),
                                 ("ClusterRole", "noderecover"), ("ClusterRoleBinding", "noderecover"),
                                 ("Role", "noderecover"), ("RoleBinding", "noderecover"),
                                 ("Role", "noderecover-events"), ("RoleBinding", "noderecover-events"),
                                 ("Deployment", "noderecover"), ("ServiceAccount", "noderecover-fence"),
                                 ("Role", "noderecover-fence"), ("RoleBinding", "noderecover-fence"),
                                 ("DaemonSet", "noderecover-fence")])
        # no Secret: its value is made once, by `kubectl create`, which the header says
        self.assertNotIn("kind: Secret", out)
        self.assertIn("kubectl -n noderecover create secret generic noderecover-fence", out)
        ns = self.doc(out, "Namespace")
        self.assertIn("pod-security.kubernetes.io/enforce: privileged", ns)
        self.assertIn("pod-security.kubernetes.io/warn: restricted", ns)
        docs = {re.search(r"^kind: (\S+)$", d, re.M).group(1) + "/" + re.search(r"^  name: (\S+)$", d, re.M).group(1): d
                for d in self.docs(out)}
        role = docs["Role/noderecover-fence"]
        self.assertIn("  namespace: noderecover\n", role)
        self.assertEqual(re.findall(r'apiGroups: \[(.*)\]\n\s+resources: \[(.*)\]\n\s+verbs: \[(.*)\]', role),
                         [('"coordination.k8s.io"', '"leases"', '"get", "list", "watch", "create", "update", "patch", "delete"')])
        binding = docs["RoleBinding/noderecover-fence"]
        self.assertIn("kind: Role\n  name: noderecover-fence\n", binding)
        self.assertIn("  - kind: ServiceAccount\n    name: noderecover-fence\n    namespace: noderecover", binding)
        ds = docs["DaemonSet/noderecover-fence"]
        for want in ("hostNetwork: true", "hostPID: true", "priorityClassName: system-node-critical",
                     "serviceAccountName: noderecover-fence", 'args: ["fence"]', "privileged: true",
                     "tolerations:\n        - operator: Exists\n      containers:",
                     "- name: NODE_NAME\n              valueFrom:\n                fieldRef:\n                  fieldPath: spec.nodeName",
                     "- name: POD_IP\n              valueFrom:\n                fieldRef:\n                  fieldPath: status.podIP",
                     '- name: NODE_RECOVERY_FENCE_PEER_SECRET_FILE\n              value: "/etc/noderecover-fence/peer-secret"',
                     "secretName: noderecover-fence", "containerPort: 9466", "path: /dev\n            type: Directory",
                     "memory: 32Mi", "app.kubernetes.io/component: fence-agent"):
            self.assertIn(want, ds)
        self.assertNotIn("livenessProbe", ds, "a restart would pet the watchdog again mid-fence")
        # the watcher's selector takes none of the agents' pods
        dep = docs["Deployment/noderecover"]
        sel = dict(re.findall(r"(app\.kubernetes\.io/\w+): (\S+)", dep.split("selector:")[1].split("template:")[0]))
        pod = dict(re.findall(r"(app\.kubernetes\.io/\w+): (\S+)", ds.split("template:")[1].split("spec:")[0]))
        self.assertFalse(all(pod.get(k) == v for k, v in sel.items()), "the Deployment's selector %s takes %s" % (sel, pod))
        # the watcher itself is today's, less the namespace's label
        plain = self.manifests("--taint-after", "300")
        self.assertEqual(self.doc(plain, "Deployment").rstrip(), dep.rstrip())

    def test_fence_settings_reach_the_agent_only(self):
        out = self.manifests("--taint-after", "300", "--fence", "--fence-after", "10s", "--fence-action", "reboot",
                             "--fence-kubelet-url", "", env={"NODE_RECOVERY_FENCE_RENEW": "2m"})
        ds = self.doc(out, "DaemonSet")
        env = dict(re.findall(r'- name: (\w+)\n\s+value: "([^"]*)"', ds))
        self.assertEqual(env, {"NODE_RECOVERY_FENCE_PEER_SECRET_FILE": "/etc/noderecover-fence/peer-secret",
                               "NODE_RECOVERY_FENCE_LISTEN": ":9466", "NODE_RECOVERY_FENCE_AFTER": "10",
                               "NODE_RECOVERY_FENCE_RENEW": "120", "NODE_RECOVERY_FENCE_ACTION": "reboot",
                               "NODE_RECOVERY_FENCE_KUBELET_URL": ""})
        self.assertNotIn("NODE_RECOVERY_FENCE_AFTER", self.doc(out, "Deployment"))
        # the defaults are not written out
        self.assertNotIn("NODE_RECOVERY_FENCE_AFTER", self.doc(self.manifests("--taint-after", "300", "--fence"), "DaemonSet"))

    def test_no_fence_without_the_flag(self):
        for args, env in (([], {}), (["--fence-after", "10s"], {}), ([], {"NODE_RECOVERY_FENCE_AFTER": "10s"})):
            with self.subTest(args=args, env=env):
                out = self.manifests("--taint-after", "300", *args, env=env)
                self.assertNotIn("DaemonSet", out)
                self.assertNotIn("noderecover-fence", out)
                self.assertIn("pod-security.kubernetes.io/enforce: restricted", out)

    def test_fence_mode(self):
        # the watcher's mode: --fence off takes its permission away and asks for no agent; require
        # and prefer, given, ask for the agent too (as --fence standing alone)
        off = self.manifests("--taint-after", "300", "--fence=off")
        self.assertNotIn("DaemonSet", off)
        self.assertEqual(re.findall(r"verbs: \[(.*)\]", self.doc(off, "Role", "noderecover")), ['"get", "create", "update"'])
        self.assertIn('- name: NODE_RECOVERY_FENCE\n              value: "off"', off)
        for args in (["--fence", "require"], ["--fence=require"], ["--fence", "prefer"], ["--fence"]):
            with self.subTest(args=args):
                out = self.manifests("--taint-after", "300", *args)
                self.assertIn("kind: DaemonSet", out)
                role = [d for d in self.docs(out) if re.search(r"^kind: Role$", d, re.M) and re.search(r"^  name: noderecover$", d, re.M)]
                self.assertEqual(len(role), 1)
                self.assertEqual(re.findall(r"verbs: \[(.*)\]", role[0]), ['"get", "create", "update"', '"get", "list", "patch"'])
                self.assertEqual("NODE_RECOVERY_FENCE\n" in out, "require" in args or "--fence=require" in args)

    def test_fence_refusals(self):
        for args in (["--fence", "--fence-action", "bogus"], ["--fence", "--fence-action", "exec"],
                     ["--fence", "--fence-after", "0"], ["--fence", "--fence-renew", "soon"]):
            with self.subTest(args=args):
                rc, out, err = self.run_bin("manifests", "--taint-after", "300", *args)
                self.assertEqual((rc, out), (2, ""), err)
                self.assertRegex(err, r"^noderecover: [^\n]*fence[^\n]*\n$")

    def test_refused_exactly_as_run_refuses(self):
        cases = [
            ([], {}),
            (["--taint-after", "5x"], {}),
            ([], {"NODE_RECOVERY_AFTER_SECONDS": "soon"}),
            (["--taint-after", "300", "--prune-after", "300"], {}),
            (["--taint-after", "300"], {"NODE_RECOVERY_PRUNE_AFTER_SECONDS": "60"}),
            (["--taint-after", "300", "--poll", "0"], {}),
            (["--taint-after", "300", "--prune-label", "bad label"], {}),
            (["--taint-after", "300", "--annotation", "/x"], {}),
            (["--taint-after", "300", "--page-size", "0"], {}),
            (["--taint-after", "300", "--server", "https://127.0.0.1:1"], {}),
            (["--taint-after", "300", "--replicas", "2"], {}),
            (["--taint-after"], {}),
            (["--taint-after", "300", "--events=no"], {}),
            (["--taint-after", "300", "--listen", "localhost:8080"], {}),
            (["--taint-after", "300"], {"NODE_RECOVERY_LISTEN": "8080"}),
        ]
        for args, env in cases:
            with self.subTest(args=args, env=env):
                rc, out, err = self.run_bin("manifests", *args, env=env)
                rrc, rout, rerr = self.run_bin("once", *args, env=env)
                self.assertEqual(rc, 2, err)
                self.assertEqual(out, "", "nothing printed on a refusal")
                self.assertEqual((rrc, err), (2, rerr), "manifests and once refuse alike")
                self.assertRegex(err, r"^noderecover: [^\n]+\n$")


if __name__ == "__main__":
    unittest.main()
