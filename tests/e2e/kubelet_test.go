package e2e

// Nodes without kubelets: a Node object plus a heartbeat loop that renews the node's
// Lease in kube-node-lease every second and posts Ready True, as a kubelet does. A node
// "stops" when its loop stops; the real node lifecycle controller then marks it Unknown.

import (
	"context"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

const (
	leaseNamespace    = "kube-node-lease"
	heartbeatInterval = time.Second
	statusInterval    = 5 * time.Second
)

type kubelet struct {
	name string
	cs   *kubernetes.Clientset

	mu      sync.Mutex
	cancel  context.CancelFunc
	done    chan struct{}
	lastErr error
	lease   *coordinationv1.Lease // last written, so a renewal is one request
	quiet   bool
}

type kubelets struct {
	cs    *kubernetes.Clientset
	mu    sync.Mutex
	nodes map[string]*kubelet
}

func newKubelets(cs *kubernetes.Clientset) *kubelets {
	return &kubelets{cs: cs, nodes: map[string]*kubelet{}}
}

type nodeSpec struct {
	name        string
	labels      map[string]string
	annotations map[string]string
	taints      []corev1.Taint
	alive       bool // keep heartbeating after registration
	quiet       bool // heartbeat by the Lease only, as a kubelet with nothing new to report: no Node write while Ready
}

func readyCondition(now metav1.Time) corev1.NodeCondition {
	return corev1.NodeCondition{
		Type:               corev1.NodeReady,
		Status:             corev1.ConditionTrue,
		Reason:             "KubeletReady",
		Message:            "simulated kubelet is posting ready status",
		LastHeartbeatTime:  now,
		LastTransitionTime: now,
	}
}

// add registers a node as a kubelet does (Node, Ready True status, Lease) and, if
// alive, keeps it heartbeating. A node added with alive=false goes Unknown after the
// node monitor grace period.
func (k *kubelets) add(ctx context.Context, s nodeSpec) (*corev1.Node, error) {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: s.name, Labels: map[string]string{
			"kubernetes.io/hostname": s.name,
			"kubernetes.io/os":       "linux",
			"kubernetes.io/arch":     "amd64",
		}, Annotations: s.annotations},
		Spec: corev1.NodeSpec{Taints: s.taints},
	}
	for key, v := range s.labels {
		node.Labels[key] = v
	}
	created, err := k.cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create node %s: %w", s.name, err)
	}
	// Post the first status as a kubelet does; the control plane may have touched the
	// Node already (not-ready taint), so retry on conflict with a fresh copy.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := k.cs.CoreV1().Nodes().Get(ctx, s.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Status = corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{readyCondition(metav1.Now())},
			Capacity: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("2"),
				corev1.ResourceMemory: resource.MustParse("4Gi"),
				corev1.ResourcePods:   resource.MustParse("110"),
			},
			Allocatable: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("2"),
				corev1.ResourceMemory: resource.MustParse("4Gi"),
				corev1.ResourcePods:   resource.MustParse("110"),
			},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: s.name}},
			NodeInfo:  corev1.NodeSystemInfo{KubeletVersion: "v1.36.3-simulated", OperatingSystem: "linux", Architecture: "amd64"},
		}
		created, err = k.cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("post status of %s: %w", s.name, err)
	}
	dur := int32(40)
	holder := s.name
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: leaseNamespace,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: s.name, UID: created.UID}}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &dur, RenewTime: &metav1.MicroTime{Time: time.Now()}},
	}
	if _, err := k.cs.CoordinationV1().Leases(leaseNamespace).Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("create lease %s: %w", s.name, err)
		}
	}
	kl := &kubelet{name: s.name, cs: k.cs, quiet: s.quiet}
	k.mu.Lock()
	k.nodes[s.name] = kl
	k.mu.Unlock()
	if s.alive {
		kl.start()
	}
	return created, nil
}

func (k *kubelets) get(name string) *kubelet {
	k.mu.Lock()
	defer k.mu.Unlock()
	kl := k.nodes[name]
	if kl == nil {
		panic("no simulated kubelet " + name)
	}
	return kl
}

func (k *kubelets) stop(name string)   { k.get(name).stop() }
func (k *kubelets) resume(name string) { k.get(name).start() }

// removeAll stops every heartbeat and deletes the nodes and leases it registered.
func (k *kubelets) removeAll(ctx context.Context) {
	k.mu.Lock()
	nodes := k.nodes
	k.nodes = map[string]*kubelet{}
	k.mu.Unlock()
	for name, kl := range nodes {
		kl.stop()
		k.cs.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
		k.cs.CoordinationV1().Leases(leaseNamespace).Delete(ctx, name, metav1.DeleteOptions{})
	}
}

func (kl *kubelet) start() {
	kl.mu.Lock()
	defer kl.mu.Unlock()
	if kl.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	kl.cancel = cancel
	kl.done = make(chan struct{})
	go kl.loop(ctx, kl.done)
}

func (kl *kubelet) stop() {
	kl.mu.Lock()
	cancel, done := kl.cancel, kl.done
	kl.cancel, kl.done = nil, nil
	kl.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

func (kl *kubelet) loop(ctx context.Context, done chan struct{}) {
	defer close(done)
	lastStatus := time.Time{}
	tick := time.NewTicker(heartbeatInterval)
	defer tick.Stop()
	for {
		if err := kl.renewLease(ctx); err != nil && ctx.Err() == nil {
			kl.setErr(err)
		}
		if time.Since(lastStatus) >= statusInterval {
			if err := kl.postReady(ctx); err != nil {
				if ctx.Err() == nil {
					kl.setErr(err)
				}
			} else {
				lastStatus = time.Now()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (kl *kubelet) setErr(err error) {
	kl.mu.Lock()
	kl.lastErr = err
	kl.mu.Unlock()
}

func (kl *kubelet) renewLease(ctx context.Context) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		l := kl.lease
		if l == nil {
			var err error
			if l, err = kl.cs.CoordinationV1().Leases(leaseNamespace).Get(ctx, kl.name, metav1.GetOptions{}); err != nil {
				return err
			}
		}
		l = l.DeepCopy()
		l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
		updated, err := kl.cs.CoordinationV1().Leases(leaseNamespace).Update(ctx, l, metav1.UpdateOptions{})
		if err != nil {
			kl.lease = nil
			return err
		}
		kl.lease = updated
		return nil
	})
}

// postReady sets the Ready condition to True with a fresh heartbeat time, keeping its
// transition time when it already was True.
func (kl *kubelet) postReady(ctx context.Context) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := kl.cs.CoreV1().Nodes().Get(ctx, kl.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		found := false
		for i := range n.Status.Conditions {
			c := &n.Status.Conditions[i]
			if c.Type != corev1.NodeReady {
				continue
			}
			found = true
			if c.Status != corev1.ConditionTrue {
				*c = readyCondition(now)
			} else if kl.quiet {
				return nil // Ready already: a quiet kubelet writes nothing
			} else {
				c.LastHeartbeatTime = now
			}
		}
		if !found {
			n.Status.Conditions = append(n.Status.Conditions, readyCondition(now))
		}
		_, err = kl.cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
}
