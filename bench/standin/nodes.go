// k3s-shaped Node objects for the benchmark: the field order, the label, annotation and
// managedFields set and the sizes follow what a k3s v1.31 agent node shows in
// `kubectl get --raw /api/v1/nodes/NAME` (about 9 KB of JSON each).
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

type objectMeta struct {
	Name              string            `json:"name"`
	UID               string            `json:"uid"`
	ResourceVersion   string            `json:"resourceVersion"`
	CreationTimestamp string            `json:"creationTimestamp"`
	Labels            map[string]string `json:"labels"`
	Annotations       map[string]string `json:"annotations"`
	ManagedFields     []managedField    `json:"managedFields"`
}

type managedField struct {
	Manager     string          `json:"manager"`
	Operation   string          `json:"operation"`
	APIVersion  string          `json:"apiVersion"`
	Time        string          `json:"time"`
	FieldsType  string          `json:"fieldsType"`
	FieldsV1    json.RawMessage `json:"fieldsV1"`
	Subresource string          `json:"subresource,omitempty"`
}

type taint struct {
	Key       string `json:"key"`
	Value     string `json:"value,omitempty"`
	Effect    string `json:"effect"`
	TimeAdded string `json:"timeAdded,omitempty"`
}

type nodeSpec struct {
	PodCIDR    string   `json:"podCIDR"`
	PodCIDRs   []string `json:"podCIDRs"`
	ProviderID string   `json:"providerID"`
	Taints     []taint  `json:"taints,omitempty"`
}

type condition struct {
	Type               string `json:"type"`
	Status             string `json:"status"`
	LastHeartbeatTime  string `json:"lastHeartbeatTime"`
	LastTransitionTime string `json:"lastTransitionTime"`
	Reason             string `json:"reason"`
	Message            string `json:"message"`
}

type address struct {
	Type    string `json:"type"`
	Address string `json:"address"`
}

type image struct {
	Names     []string `json:"names"`
	SizeBytes int64    `json:"sizeBytes"`
}

type nodeInfo struct {
	MachineID               string `json:"machineID"`
	SystemUUID              string `json:"systemUUID"`
	BootID                  string `json:"bootID"`
	KernelVersion           string `json:"kernelVersion"`
	OSImage                 string `json:"osImage"`
	ContainerRuntimeVersion string `json:"containerRuntimeVersion"`
	KubeletVersion          string `json:"kubeletVersion"`
	KubeProxyVersion        string `json:"kubeProxyVersion"`
	OperatingSystem         string `json:"operatingSystem"`
	Architecture            string `json:"architecture"`
}

type daemonEndpoints struct {
	KubeletEndpoint struct {
		Port int `json:"Port"`
	} `json:"kubeletEndpoint"`
}

type nodeStatus struct {
	Capacity        map[string]string `json:"capacity"`
	Allocatable     map[string]string `json:"allocatable"`
	Conditions      []condition       `json:"conditions"`
	Addresses       []address         `json:"addresses"`
	DaemonEndpoints daemonEndpoints   `json:"daemonEndpoints"`
	NodeInfo        nodeInfo          `json:"nodeInfo"`
	Images          []image           `json:"images"`
}

// A Node as it appears inside a NodeList (items carry no kind/apiVersion there).
type node struct {
	Metadata objectMeta `json:"metadata"`
	Spec     nodeSpec   `json:"spec"`
	Status   nodeStatus `json:"status"`
}

// hexOf gives n deterministic hex digits derived from the seed strings.
func hexOf(n int, seed ...string) string {
	h := sha256.New()
	for _, s := range seed {
		h.Write([]byte(s))
	}
	out := hex.EncodeToString(h.Sum(nil))
	for len(out) < n {
		h.Write([]byte(out))
		out += hex.EncodeToString(h.Sum(nil))
	}
	return out[:n]
}

func uuidOf(seed ...string) string {
	x := hexOf(32, seed...)
	return x[0:8] + "-" + x[8:12] + "-4" + x[13:16] + "-a" + x[17:20] + "-" + x[20:32]
}

var imageRepos = []string{
	"docker.io/rancher/mirrored-pause:3.6",
	"docker.io/rancher/mirrored-coredns-coredns:1.11.3",
	"docker.io/rancher/local-path-provisioner:v0.0.30",
	"docker.io/rancher/mirrored-metrics-server:v0.7.2",
	"docker.io/rancher/klipper-helm:v0.9.3",
	"docker.io/rancher/klipper-lb:v0.4.9",
	"docker.io/library/traefik:2.11",
	"docker.io/library/busybox:1.36",
	"ghcr.io/actions/actions-runner:2.321.0",
	"ghcr.io/actions/dind:27.3",
	"quay.io/prometheus/node-exporter:v1.8.2",
	"quay.io/prometheus/pushgateway:v1.10",
	"registry.k8s.io/pause:3.10",
	"docker.io/grafana/promtail:3.0.0",
	"docker.io/library/postgres:16.4",
	"docker.io/library/redis:7.4.1",
	"docker.io/library/nginx:1.27.2",
	"docker.io/library/golang:1.23",
	"docker.io/library/node:22.11",
	"docker.io/library/python:3.12",
	"docker.io/moby/buildkit:v0.17.2",
	"quay.io/jetstack/cert-manager:v1.16",
	"docker.io/library/alpine:3.20",
	"docker.io/library/debian:12.8",
	"docker.io/bitnami/kubectl:1.31",
}

// makeNode builds node i of a cluster; unknown nodes have been Unknown since now-1h.
func makeNode(i int, now time.Time, rv int) node {
	name := fmt.Sprintf("k3s-agent-%05d", i)
	ip := fmt.Sprintf("10.%d.%d.%d", 20+i/65536, (i/256)%256, i%256)
	ts := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	created := now.Add(-time.Duration(72+i%500) * time.Hour)
	unknown := i%10 == 9
	beat := now.Add(-time.Duration(i%40) * time.Second)
	since := created.Add(2 * time.Minute)
	if unknown {
		beat = now.Add(-time.Hour - 40*time.Second)
		since = now.Add(-time.Hour)
	}
	labels := map[string]string{
		"beta.kubernetes.io/arch":           "amd64",
		"beta.kubernetes.io/instance-type":  "k3s",
		"beta.kubernetes.io/os":             "linux",
		"kubernetes.io/arch":                "amd64",
		"kubernetes.io/hostname":            name,
		"kubernetes.io/os":                  "linux",
		"node.kubernetes.io/instance-type":  "k3s",
		"topology.kubernetes.io/region":     "eu-central",
		"topology.kubernetes.io/zone":       fmt.Sprintf("eu-central-%d", 1+i%3),
		"github-runner.exadev.io/removable": "true",
		"github-runner.exadev.io/pool":      fmt.Sprintf("pool-%02d", i%16),
		"node.exadev.io/rack":               fmt.Sprintf("r%03d", i/40),
	}
	podCIDR := fmt.Sprintf("10.42.%d.0/24", i%256)
	annotations := map[string]string{
		"alpha.kubernetes.io/provided-node-ip":                   ip,
		"flannel.alpha.coreos.com/backend-data":                  fmt.Sprintf(`{"VNI":1,"VtepMAC":"%s"}`, macOf(name)),
		"flannel.alpha.coreos.com/backend-type":                  "vxlan",
		"flannel.alpha.coreos.com/kube-subnet-manager":           "true",
		"flannel.alpha.coreos.com/public-ip":                     ip,
		"k3s.io/hostname":                                        name,
		"k3s.io/internal-ip":                                     ip,
		"k3s.io/node-args":                                       fmt.Sprintf(`["agent","--node-label","github-runner.exadev.io/pool=pool-%02d","--server","https://10.0.0.10:6443","--token","********"]`, i%16),
		"k3s.io/node-config-hash":                                hexOf(52, "cfg", name),
		"k3s.io/node-env":                                        `{"K3S_DATA_DIR":"/var/lib/rancher/k3s/data/` + hexOf(64, "data") + `","K3S_TOKEN":"********","K3S_URL":"https://10.0.0.10:6443"}`,
		"node.alpha.kubernetes.io/ttl":                           "0",
		"volumes.kubernetes.io/controller-managed-attach-detach": "true",
	}
	mf := []managedField{
		{Manager: "k3s", Operation: "Update", APIVersion: "v1", Time: ts(created.Add(20 * time.Second)), FieldsType: "FieldsV1",
			FieldsV1: json.RawMessage(`{"f:metadata":{"f:annotations":{".":{},"f:alpha.kubernetes.io/provided-node-ip":{},"f:k3s.io/hostname":{},"f:k3s.io/internal-ip":{},"f:k3s.io/node-args":{},"f:k3s.io/node-config-hash":{},"f:k3s.io/node-env":{}},"f:labels":{".":{},"f:github-runner.exadev.io/pool":{},"f:github-runner.exadev.io/removable":{},"f:node.exadev.io/rack":{},"f:node.kubernetes.io/instance-type":{}}}}`)},
		{Manager: "kube-controller-manager", Operation: "Update", APIVersion: "v1", Time: ts(created.Add(30 * time.Second)), FieldsType: "FieldsV1",
			FieldsV1: json.RawMessage(`{"f:metadata":{"f:annotations":{"f:node.alpha.kubernetes.io/ttl":{}},"f:labels":{"f:topology.kubernetes.io/region":{},"f:topology.kubernetes.io/zone":{}}},"f:spec":{"f:podCIDR":{},"f:podCIDRs":{".":{},"v:\"` + podCIDR + `\"":{}}}}`)},
		{Manager: "k3s-supervisor", Operation: "Update", APIVersion: "v1", Time: ts(created.Add(25 * time.Second)), FieldsType: "FieldsV1",
			FieldsV1: json.RawMessage(`{"f:spec":{"f:providerID":{}}}`)},
		{Manager: "k3s", Operation: "Update", APIVersion: "v1", Time: ts(beat), FieldsType: "FieldsV1", Subresource: "status",
			FieldsV1: json.RawMessage(`{"f:status":{"f:allocatable":{"f:cpu":{},"f:ephemeral-storage":{},"f:memory":{}},"f:capacity":{"f:cpu":{},"f:ephemeral-storage":{},"f:memory":{}},"f:conditions":{"k:{\"type\":\"DiskPressure\"}":{"f:lastHeartbeatTime":{},"f:lastTransitionTime":{},"f:message":{},"f:reason":{},"f:status":{}},"k:{\"type\":\"MemoryPressure\"}":{"f:lastHeartbeatTime":{},"f:lastTransitionTime":{},"f:message":{},"f:reason":{},"f:status":{}},"k:{\"type\":\"PIDPressure\"}":{"f:lastHeartbeatTime":{},"f:lastTransitionTime":{},"f:message":{},"f:reason":{},"f:status":{}},"k:{\"type\":\"Ready\"}":{"f:lastHeartbeatTime":{},"f:lastTransitionTime":{},"f:message":{},"f:reason":{},"f:status":{}}},"f:images":{},"f:nodeInfo":{"f:bootID":{},"f:containerRuntimeVersion":{},"f:kernelVersion":{},"f:kubeProxyVersion":{},"f:kubeletVersion":{},"f:machineID":{},"f:osImage":{},"f:systemUUID":{}}}}`)},
	}
	conds := []condition{
		{"MemoryPressure", "False", ts(beat), ts(since), "KubeletHasSufficientMemory", "kubelet has sufficient memory available"},
		{"DiskPressure", "False", ts(beat), ts(since), "KubeletHasNoDiskPressure", "kubelet has no disk pressure"},
		{"PIDPressure", "False", ts(beat), ts(since), "KubeletHasSufficientPID", "kubelet has sufficient PID available"},
		{"Ready", "True", ts(beat), ts(since), "KubeletReady", "kubelet is posting ready status"},
	}
	var taints []taint
	if unknown {
		for k := range conds {
			conds[k].Status = "Unknown"
			conds[k].Reason = "NodeStatusUnknown"
			conds[k].Message = "Kubelet stopped posting node status."
		}
		taints = []taint{
			{Key: "node.kubernetes.io/unreachable", Effect: "NoSchedule", TimeAdded: ts(since)},
			{Key: "node.kubernetes.io/unreachable", Effect: "NoExecute", TimeAdded: ts(since.Add(5 * time.Second))},
		}
	}
	imgs := make([]image, len(imageRepos))
	for k, r := range imageRepos {
		repo := r
		for j := len(r) - 1; j >= 0; j-- {
			if r[j] == ':' {
				repo = r[:j]
				break
			}
		}
		imgs[k] = image{Names: []string{repo + "@sha256:" + hexOf(64, r), r}, SizeBytes: int64(300000 + (k*7919%500)*104729)}
	}
	return node{
		Metadata: objectMeta{
			Name: name, UID: uuidOf("uid", name), ResourceVersion: fmt.Sprint(rv),
			CreationTimestamp: ts(created), Labels: labels, Annotations: annotations, ManagedFields: mf,
		},
		Spec: nodeSpec{PodCIDR: podCIDR, PodCIDRs: []string{podCIDR}, ProviderID: "k3s://" + name, Taints: taints},
		Status: nodeStatus{
			Capacity:    map[string]string{"cpu": "8", "ephemeral-storage": "153707984Ki", "hugepages-1Gi": "0", "hugepages-2Mi": "0", "memory": "32863156Ki", "pods": "110"},
			Allocatable: map[string]string{"cpu": "8", "ephemeral-storage": "149527126718", "hugepages-1Gi": "0", "hugepages-2Mi": "0", "memory": "32863156Ki", "pods": "110"},
			Conditions:  conds,
			Addresses:   []address{{"InternalIP", ip}, {"Hostname", name}},
			DaemonEndpoints: func() daemonEndpoints {
				var d daemonEndpoints
				d.KubeletEndpoint.Port = 10250
				return d
			}(),
			NodeInfo: nodeInfo{
				MachineID: hexOf(32, "machine", name), SystemUUID: uuidOf("sys", name), BootID: uuidOf("boot", name),
				KernelVersion: "6.1.0-27-amd64", OSImage: "Debian GNU/Linux 12 (bookworm)",
				ContainerRuntimeVersion: "containerd://1.7.22-k3s1", KubeletVersion: "v1.31.2+k3s1",
				KubeProxyVersion: "v1.31.2+k3s1", OperatingSystem: "linux", Architecture: "amd64",
			},
			Images: imgs,
		},
	}
}

func macOf(name string) string {
	x := hexOf(12, "mac", name)
	return x[0:2] + ":" + x[2:4] + ":" + x[4:6] + ":" + x[6:8] + ":" + x[8:10] + ":" + x[10:12]
}

// unknownSince is nd with every condition Unknown since at, as the node lifecycle controller
// writes a node that stopped reporting.
func unknownSince(nd node, at time.Time) node {
	ts := at.UTC().Format(time.RFC3339)
	conds := make([]condition, len(nd.Status.Conditions))
	for k, c := range nd.Status.Conditions {
		c.Status, c.Reason, c.Message = "Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status."
		c.LastTransitionTime = ts
		conds[k] = c
	}
	nd.Status.Conditions = conds
	return nd
}
