// Package e2e runs noderecover against a real Kubernetes control plane (etcd,
// kube-apiserver, kube-controller-manager) built from the versions pinned in go.mod,
// with simulated kubelets. See README.md; run it with ./run.sh.
package e2e
