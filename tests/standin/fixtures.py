"""k3s-shaped Node objects for the stand-in API server.

node() builds one Node dict the way `kubectl get node -o json` shows a k3s v1.34 node:
labels and annotations k3s sets, managedFields (whose fieldsV1 keys such as
`k:{"type":"Ready"}` are strings a naive scanner can trip on), ~25 images, nodeInfo,
and status.conditions in an order that varies from node to node. The Ready condition's
lastHeartbeatTime is kept well before its lastTransitionTime, as it is on a node that
stopped reporting, so a reader that used the wrong field would act too early.

The k3s shape itself (the label and annotation keys, the image repositories, the conditions'
reasons and messages) is written here once: tests/unit/json/make_fixtures.py builds the unit
tests' recorded nodes from the same pieces, with fixed times instead of times relative to now.
"""
import datetime
import hashlib
import uuid

OOS_KEY = "node.kubernetes.io/out-of-service"
OOS_TAINT = {"key": OOS_KEY, "value": "nodeshutdown", "effect": "NoExecute"}
DEFAULT_ANNOTATION = "github-runner.exadev/out-of-service-applied-at"
DEFAULT_PRUNE_LABEL = "github-runner.exadev.io/removable"
CP_LABEL = "node-role.kubernetes.io/control-plane"
ETCD_LABEL = "node-role.kubernetes.io/etcd"


def rfc3339(seconds_ago, now=None):
    now = now or datetime.datetime.now(datetime.timezone.utc)
    t = now - datetime.timedelta(seconds=seconds_ago)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


# The images a k3s runner node has pulled, in this order; each has a digest name and a tag name.
IMAGE_REPOS = ["docker.io/rancher/mirrored-pause", "docker.io/rancher/klipper-helm",
               "docker.io/rancher/mirrored-coredns-coredns", "docker.io/rancher/local-path-provisioner",
               "docker.io/rancher/mirrored-metrics-server", "docker.io/rancher/klipper-lb",
               "docker.io/rancher/mirrored-library-traefik", "docker.io/rancher/mirrored-library-busybox",
               "ghcr.io/actions/gha-runner-scale-set-controller", "ghcr.io/actions/actions-runner",
               "quay.io/jetstack/cert-manager-controller", "quay.io/jetstack/cert-manager-webhook",
               "registry.k8s.io/ingress-nginx/controller", "docker.io/library/postgres",
               "docker.io/library/redis", "docker.io/grafana/grafana", "quay.io/prometheus/prometheus",
               "quay.io/prometheus/node-exporter", "docker.io/bitnami/kubectl",
               "ghcr.io/fluxcd/source-controller", "ghcr.io/fluxcd/kustomize-controller",
               "docker.io/library/nginx", "docker.io/library/alpine", "docker.io/library/debian",
               "docker.io/library/golang", "docker.io/library/python", "docker.io/library/node",
               "docker.io/library/busybox"]

# A condition's reason and message as the kubelet and the node controller write them: the
# pressure conditions healthy, any condition Unknown, and Ready True or False.
REASONS = {
    "MemoryPressure": ("KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    "DiskPressure": ("KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    "PIDPressure": ("KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    "EtcdIsVoter": ("MemberNotLearner", "Node is a voting etcd member"),
    "Unknown": ("NodeStatusUnknown", "Kubelet stopped posting node status."),
    "Ready": ("KubeletReady", "kubelet is posting ready status"),
    "NotReady": ("KubeletNotReady", "container runtime network not ready: NetworkReady=false"),
}



def k3s_labels(name):
    """The labels every k3s node carries, in the order the API server writes them."""
    return {"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/instance-type": "k3s",
            "beta.kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
            "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
            "node.kubernetes.io/instance-type": "k3s"}


def images(name, repos=IMAGE_REPOS):
    """status.images of the node name: the repos' images, names and sizes derived from it."""
    return [{"names": ["%s@sha256:%s" % (r, hashlib.sha256((name + r).encode()).hexdigest()),
                       "%s:v1.%d.%d" % (r, i, len(name))],
             "sizeBytes": 1000000 + i * 7919 * 131} for i, r in enumerate(repos)]


def condition(typ, status, heartbeat, transition, reason=None, message=None):
    """One status.conditions entry; reason and message default to REASONS' for typ and status."""
    key = ("Unknown" if status == "Unknown" else "NotReady" if typ == "Ready" and status == "False" else typ)
    r, m = REASONS[key]
    return {"type": typ, "status": status, "lastHeartbeatTime": heartbeat, "lastTransitionTime": transition,
            "reason": reason or r, "message": message or m}


def _conditions(ready, since, order_seed, ready_reason=None):
    now_hb = rfc3339(2)
    conds = [condition(t, "False", now_hb, rfc3339(86400)) for t in ("MemoryPressure", "DiskPressure", "PIDPressure")]
    if ready is not None:
        if ready == "Unknown":
            conds = [condition(c["type"], "Unknown", rfc3339(since + 3600), rfc3339(since)) for c in conds]
            r = condition("Ready", "Unknown", rfc3339(since + 3600), rfc3339(since))
        elif ready == "True":
            r = condition("Ready", "True", now_hb, rfc3339(since))
        else:
            r = condition("Ready", ready, now_hb, rfc3339(since), *REASONS["NotReady"])
            r["reason"] = ready_reason or r["reason"]
        conds.append(r)
    # vary the order: rotate by a per-node amount, reverse some
    n = order_seed % max(1, len(conds))
    conds = conds[n:] + conds[:n]
    if order_seed % 2:
        conds.reverse()
    return conds


def node(name, ready="True", since=3600, labels=None, taints=None, annotations=None,
         uid=None, rv="1000", server=False, etcd=None, no_taints=False, no_annotations=False,
         extra_conditions=None):
    """One k3s-shaped Node.

    ready: "True", "False", "Unknown", or None for no Ready condition at all.
    since: seconds since the Ready condition's lastTransitionTime.
    server: add the labels a k3s server carries (control-plane, etcd, master) unless
            etcd is False (then control-plane + master only).
    etcd: True adds the etcd role label on its own (no control-plane label).
    no_taints / no_annotations: leave spec.taints / metadata.annotations out entirely.
    """
    seed = int(hashlib.md5(name.encode()).hexdigest(), 16)
    lab = k3s_labels(name)
    if server:
        lab[CP_LABEL] = "true"
        lab["node-role.kubernetes.io/master"] = "true"
        if etcd is not False:
            lab[ETCD_LABEL] = "true"
    elif etcd:
        lab[ETCD_LABEL] = "true"
    if labels:
        lab.update(labels)
    ann = {
        "alpha.kubernetes.io/provided-node-ip": "10.0.0.%d" % (seed % 250 + 1),
        "flannel.alpha.coreos.com/backend-data": '{"VNI":1,"VtepMAC":"7a:1c:0d:%02x:%02x:%02x"}' % (
            seed % 256, (seed >> 8) % 256, (seed >> 16) % 256),
        "flannel.alpha.coreos.com/backend-type": "vxlan",
        "flannel.alpha.coreos.com/kube-subnet-manager": "true",
        "flannel.alpha.coreos.com/public-ip": "10.0.0.%d" % (seed % 250 + 1),
        "k3s.io/hostname": name,
        "k3s.io/internal-ip": "10.0.0.%d" % (seed % 250 + 1),
        "k3s.io/node-args": '["agent","--node-label","github-runner.exadev.io/removable=true","--server","https://10.0.0.1:6443"]',
        "k3s.io/node-config-hash": "Q5ZP4AJ5CX7X2OQ5WSJGJ3AWMBPIWRBQAOFN3YLD6FVZ3RSRMVWQ====",
        "k3s.io/node-env": '{"K3S_TOKEN":"********","K3S_URL":"https://10.0.0.1:6443"}',
        "node.alpha.kubernetes.io/ttl": "0",
        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
        "example.com/note": "caf\u00e9 <runner> & \"quoted\" \\ back",
    }
    if annotations:
        ann.update(annotations)
    uid = uid or str(uuid.UUID(int=seed % (1 << 128)))
    meta = {
        "name": name, "uid": uid, "resourceVersion": rv,
        "creationTimestamp": rfc3339(86400 * 3),
        "labels": lab,
        "annotations": ann,
        "finalizers": ["wrangler.cattle.io/node"],
        "managedFields": [
            {"manager": "k3s", "operation": "Update", "apiVersion": "v1", "time": rfc3339(600),
             "fieldsType": "FieldsV1",
             "fieldsV1": {"f:metadata": {"f:annotations": {".": {}, "f:k3s.io/hostname": {},
                                                            "f:k3s.io/node-args": {}},
                                         "f:finalizers": {".": {}, "v:\"wrangler.cattle.io/node\"": {}},
                                         "f:labels": {"f:" + CP_LABEL: {}, "f:" + ETCD_LABEL: {}}}}},
            {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
             "time": rfc3339(30), "fieldsType": "FieldsV1", "subresource": "status",
             "fieldsV1": {"f:status": {"f:conditions": {
                 "k:{\"type\":\"Ready\"}": {"f:lastHeartbeatTime": {}, "f:lastTransitionTime": {},
                                            "f:message": {}, "f:reason": {}, "f:status": {}},
                 "k:{\"type\":\"DiskPressure\"}": {"f:status": {}}}}}},
            {"manager": "kubectl-taint", "operation": "Update", "apiVersion": "v1",
             "time": rfc3339(7200), "fieldsType": "FieldsV1",
             "fieldsV1": {"f:spec": {"f:taints": {}}}},
        ],
    }
    spec = {"podCIDR": "10.42.%d.0/24" % (seed % 200), "podCIDRs": ["10.42.%d.0/24" % (seed % 200)],
            "providerID": "k3s://" + name}
    if taints and not no_taints:
        spec["taints"] = [dict(t) for t in taints]
    # no taints: the key is absent, as the real apiserver leaves it (omitempty)
    if no_annotations:
        del meta["annotations"]
    conds = _conditions(ready, since, seed)
    if extra_conditions:
        conds.extend(extra_conditions)
    if server:
        conds.insert(seed % (len(conds) + 1), condition("EtcdIsVoter", "True", rfc3339(100), rfc3339(86400)))
    status = {
        "addresses": [{"type": "InternalIP", "address": ann.get("k3s.io/internal-ip", "10.0.0.9")},
                      {"type": "Hostname", "address": name}],
        "allocatable": {"cpu": "4", "ephemeral-storage": "39358207765", "hugepages-1Gi": "0",
                        "hugepages-2Mi": "0", "memory": "16283236Ki", "pods": "110"},
        "capacity": {"cpu": "4", "ephemeral-storage": "40458684Ki", "hugepages-1Gi": "0",
                     "hugepages-2Mi": "0", "memory": "16283236Ki", "pods": "110"},
        "conditions": conds,
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "images": images(name),
        "nodeInfo": {"architecture": "amd64", "bootID": str(uuid.UUID(int=(seed >> 3) % (1 << 128))),
                     "containerRuntimeVersion": "containerd://2.1.4-k3s1",
                     "kernelVersion": "6.1.0-40-amd64", "kubeProxyVersion": "",
                     "kubeletVersion": "v1.34.1+k3s1", "machineID": hashlib.md5(name.encode()).hexdigest(),
                     "operatingSystem": "linux", "osImage": "Debian GNU/Linux 12 (bookworm)",
                     "systemUUID": str(uuid.UUID(int=(seed >> 5) % (1 << 128)))},
    }
    return {"metadata": meta, "spec": spec, "status": status}


def etcd_servers(n, prefix="server", ready="True", start=0):
    """n k3s servers (control-plane + etcd labels), Ready by default."""
    return [node("%s-%d" % (prefix, i), ready=ready, server=True) for i in range(start, start + n)]
