#!/usr/bin/env python3
"""Writes the recorded Node and NodeList fixtures of test_json.c (run from this directory).

Shaped like `kubectl get node -o json` of a k3s v1.34 cluster, compact as the API server sends
them: ~13 labels, k3s and flannel annotations, 4 managedFields entries with fieldsV1 (whose
keys like k:{"type":"Ready"} trip naive scanners), ~28 images of two names each, nodeInfo, and
conditions in a different order on each node. Times are fixed, so the expected facts in
test_json.c are constants. The files are committed; this script is how they were made. The k3s
shape (keys, images, the conditions' reasons and messages) comes from tests/standin/fixtures.py,
which writes it once for the stand-in's nodes too.
"""
import hashlib
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "standin"))
from fixtures import (CP_LABEL as CP, ETCD_LABEL as ETCD, DEFAULT_ANNOTATION as ANN,  # noqa: E402
                      DEFAULT_PRUNE_LABEL as PRUNE, OOS_KEY as OOS, condition, images, k3s_labels)


def h(s, n=64):
    return hashlib.sha256(s.encode()).hexdigest()[:n]


def uid(s):
    x = h(s, 32)
    return "%s-%s-%s-%s-%s" % (x[:8], x[8:12], x[12:16], x[16:20], x[20:])


def conditions(ready, ready_since, hb, order):
    c = {t: condition(t, "False", hb, "2026-11-27T08:14:02Z") for t in ("MemoryPressure", "DiskPressure", "PIDPressure")}
    c["EtcdIsVoter"] = condition("EtcdIsVoter", "True", hb, "2026-11-27T08:15:40Z")
    if ready == "Unknown":
        for k in ("MemoryPressure", "DiskPressure", "PIDPressure"):
            c[k] = condition(k, "Unknown", hb, ready_since)
    if ready is not None:
        c["Ready"] = condition("Ready", ready, hb, ready_since)
    return [c[k] for k in order if k in c]


def node(name, ip, rv, ready, ready_since, order, server=False, taints=None, extra_labels=None,
         extra_ann=None, no_annotations=False, hb="2026-11-30T03:01:58Z"):
    labels = dict(k3s_labels(name), **{"topology.kubernetes.io/region": "eu-west",
                                       "topology.kubernetes.io/zone": "eu-west-1a"})
    if server:
        labels.update({CP: "true", ETCD: "true", "node-role.kubernetes.io/master": "true"})
    else:
        labels["node-role.kubernetes.io/runner"] = "true"
    labels.update(extra_labels or {})
    role = "server" if server else "agent"
    args = (["server", "--cluster-init", "--disable", "servicelb", "--tls-san", "k3s.example.internal"]
            if server else ["agent", "--node-label", PRUNE + "=true", "--server", "https://10.0.0.11:6443"])
    ann = {
        "alpha.kubernetes.io/provided-node-ip": ip,
        "flannel.alpha.coreos.com/backend-data": json.dumps({"VNI": 1, "VtepMAC": "7a:1c:0d:%s:%s:%s" % (
            h(name)[0:2], h(name)[2:4], h(name)[4:6])}, separators=(",", ":")),
        "flannel.alpha.coreos.com/backend-type": "vxlan",
        "flannel.alpha.coreos.com/kube-subnet-manager": "true",
        "flannel.alpha.coreos.com/public-ip": ip,
        "k3s.io/hostname": name,
        "k3s.io/internal-ip": ip,
        "k3s.io/node-args": json.dumps(args, separators=(",", ":")),
        "k3s.io/node-config-hash": h(name + "cfg", 52).upper() + "====",
        "k3s.io/node-env": '{"K3S_DATA_DIR":"/var/lib/rancher/k3s/data/%s"}' % h(name + "d"),
        "node.alpha.kubernetes.io/ttl": "0",
        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
    }
    if server:
        ann["etcd.k3s.cattle.io/node-address"] = ip
        ann["etcd.k3s.cattle.io/node-name"] = name + "-" + h(name, 8)
    ann.update(extra_ann or {})
    meta = {"name": name, "uid": uid(name), "resourceVersion": rv,
            "creationTimestamp": "2026-11-27T08:13:55Z", "labels": labels}
    if not no_annotations:
        meta["annotations"] = ann
    meta["finalizers"] = ["wrangler.cattle.io/node"]
    meta["managedFields"] = [
        {"manager": "k3s", "operation": "Update", "apiVersion": "v1", "time": "2026-11-27T08:14:10Z",
         "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {
             "f:annotations": {".": {}, **{"f:" + k: {} for k in ann}},
             "f:finalizers": {".": {}, 'v:"wrangler.cattle.io/node"': {}},
             "f:labels": {"f:" + CP: {}, "f:" + ETCD: {}} if server else {"f:" + PRUNE: {}}}}},
        {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
         "time": "2026-11-27T08:14:12Z", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:metadata": {"f:annotations": {"f:node.alpha.kubernetes.io/ttl": {}}},
                      "f:spec": {"f:podCIDR": {}, "f:podCIDRs": {".": {}, 'v:"10.42.0.0/24"': {}}}}},
        {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": hb,
         "fieldsType": "FieldsV1", "subresource": "status",
         "fieldsV1": {"f:status": {"f:conditions": {
             'k:{"type":"%s"}' % t: {".": {}, "f:lastHeartbeatTime": {}, "f:lastTransitionTime": {},
                                    "f:message": {}, "f:reason": {}, "f:status": {}, "f:type": {}}
             for t in ("DiskPressure", "MemoryPressure", "PIDPressure", "Ready")},
             "f:images": {}, "f:nodeInfo": {"f:bootID": {}}}}},
        {"manager": "noderecover", "operation": "Update", "apiVersion": "v1", "time": "2026-11-30T02:58:00Z",
         "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:taints": {}}}},
    ]
    n3 = int(h(name, 2), 16) % 200
    spec = {"podCIDR": "10.42.%d.0/24" % n3, "podCIDRs": ["10.42.%d.0/24" % n3], "providerID": "k3s://" + name}
    if taints is not None:
        spec["taints"] = taints
    status = {
        "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}],
        "allocatable": {"cpu": "4", "ephemeral-storage": "39358207765", "hugepages-1Gi": "0",
                        "hugepages-2Mi": "0", "memory": "16283236Ki", "pods": "110"},
        "capacity": {"cpu": "4", "ephemeral-storage": "40458684Ki", "hugepages-1Gi": "0",
                     "hugepages-2Mi": "0", "memory": "16283236Ki", "pods": "110"},
        "conditions": conditions(ready, ready_since, hb, order),
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "images": images(name),
        "nodeInfo": {"architecture": "amd64", "bootID": uid(name + "boot"),
                     "containerRuntimeVersion": "containerd://2.1.4-k3s1", "kernelVersion": "6.1.0-40-amd64",
                     "kubeProxyVersion": "", "kubeletVersion": "v1.34.1+k3s1", "machineID": h(name, 32),
                     "operatingSystem": "linux", "osImage": "Debian GNU/Linux 12 (bookworm)",
                     "systemUUID": uid(name + "sys")},
        "runtimeHandlers": [{"features": {"recursiveReadOnlyMounts": True, "userNamespaces": True}, "name": "runc"},
                            {"features": {"recursiveReadOnlyMounts": True, "userNamespaces": True}, "name": ""}],
    }
    return {"kind": "Node", "apiVersion": "v1", "metadata": meta, "spec": spec, "status": status}


def dump(o):
    return json.dumps(o, separators=(",", ":"))


UNREACH = [{"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule", "timeAdded": "2026-11-30T02:55:31Z"},
           {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": "2026-11-30T02:55:36Z"}]
ALL = ["MemoryPressure", "DiskPressure", "PIDPressure", "EtcdIsVoter", "Ready"]

nodes = {
    # A k3s server, Ready, conditions in k3s's usual order, no taints.
    "server-1": node("server-1", "10.0.0.11", "48213", "True", "2026-11-27T08:14:22Z", ALL, server=True),
    # An agent that stopped reporting: Unknown, Ready first, the node controller's taints.
    "agent-2-unknown": node("agent-2", "10.0.0.22", "51002", "Unknown", "2026-11-30T02:55:31Z",
                            ["Ready", "PIDPressure", "MemoryPressure", "DiskPressure"],
                            taints=UNREACH, extra_labels={PRUNE: "true"}),
    # Ours: the out-of-service taint at index 1, our annotation, removable.
    "agent-3-tainted": node("agent-3", "10.0.0.23", "51377", "Unknown", "2026-11-30T02:41:07Z",
                            ["DiskPressure", "Ready", "MemoryPressure", "PIDPressure"],
                            taints=[UNREACH[0], {"key": OOS, "value": "nodeshutdown", "effect": "NoExecute",
                                                 "timeAdded": "2026-11-30T02:58:00Z"}, UNREACH[1]],
                            extra_labels={PRUNE: "true"}, extra_ann={ANN: "2026-11-30T02:58:00Z"}),
    # No Ready condition at all (a node registering), NotReady-ish other conditions.
    "agent-4-noready": node("agent-4", "10.0.0.24", "51410", None, None,
                            ["PIDPressure", "DiskPressure", "MemoryPressure"],
                            taints=[{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]),
    # NotReady (False), no taints, no annotations, prune label not "true".
    "agent-5-bare": node("agent-5", "10.0.0.25", "51533", "False", "2026-11-30T01:12:09.123456+01:00",
                         ["MemoryPressure", "Ready", "DiskPressure", "PIDPressure"], no_annotations=True,
                         extra_labels={PRUNE: "false"}),
}

for fn, n in nodes.items():
    with open(fn + ".json", "w") as f:
        f.write(dump(n))

# A k3s etcd-only server, written with every "/" escaped and some keys and values \u-escaped,
# as a hostile or unusual encoder might: the facts must be the same as for plain text.
esc = node("etcd-6", "10.0.0.26", "51600", "Unknown", "2026-11-30T03:00:00.5-00:30",
           ["PIDPressure", "Ready", "DiskPressure", "MemoryPressure", "EtcdIsVoter"],
           taints=[{"key": OOS, "value": "nodeshutdown", "effect": "NoExecute"}],
           extra_ann={ANN: "x", "note": "caf\u00e9 \U0001f680 \"q\" \\ \n"}, extra_labels={PRUNE: "true"})
esc["metadata"]["labels"][ETCD] = "true"
esc["metadata"]["name"] = "etcd-6\u00e9"
t = dump(esc).replace("/", "\\/")
t = t.replace('"Ready"', '"\\u0052eady"').replace('"Unknown"', '"Unkn\\u006fwn"')
t = t.replace('"metadata"', '"\\u006detadata"', 1).replace('"etcd-6\\u00e9"', '"etcd-6\\u00E9"')
t = t.replace('removable":"true"', 'removabl\\u0065":"tru\\u0065"')
with open("etcd-6-escaped.json", "w") as f:
    f.write(t)

# One page of a list: metadata first, a continue token, and the five nodes in file order.
order = ["server-1", "agent-2-unknown", "agent-3-tainted", "agent-4-noready", "agent-5-bare"]
with open("list-page1.json", "w") as f:
    f.write('{"kind":"NodeList","apiVersion":"v1","metadata":{"resourceVersion":"51702",'
            '"continue":"eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6NTE3MDIsInN0YXJ0IjoiYWdlbnQtNVx1MDAwMCJ9",'
            '"remainingItemCount":1},"items":[' + ",".join(dump(nodes[k]) for k in order) + "]}")
