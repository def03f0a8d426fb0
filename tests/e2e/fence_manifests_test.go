package e2e

// Static checks of the fence agent's objects (issue 23) in deploy/noderecover-fence.yaml, which
// is `noderecover manifests --taint-after 300 --fence` (tests/standin/test_manifests.py compares
// the bytes): each decoded into its Kubernetes type with unknown fields refused, so a field the
// API server would reject or drop fails here, and the pod's needs (README "The fence agent on
// every node") are what the README says.

import (
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

func TestFenceManifests(t *testing.T) {
	objs := readManifest(t, "noderecover-fence.yaml")
	const name, ns = "noderecover-fence", "noderecover"
	for _, u := range objs {
		if u.GetKind() == "Secret" {
			t.Errorf("a Secret in deploy/noderecover-fence.yaml: its value would be everyone's")
		}
	}
	nsObj := objectOf[corev1.Namespace](t, objs, "Namespace", ns)
	if nsObj.Labels["pod-security.kubernetes.io/enforce"] != "privileged" {
		t.Errorf("namespace %s: Pod Security enforce %q, want privileged (the agent's pods)", ns, nsObj.Labels["pod-security.kubernetes.io/enforce"])
	}
	sa := objectIn[corev1.ServiceAccount](t, objs, "ServiceAccount", ns, name)
	role := objectIn[rbacv1.Role](t, objs, "Role", ns, name)
	want := []rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"},
		Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}}
	if !reflect.DeepEqual(role.Rules, want) {
		t.Errorf("Role %s: rules %+v, want %+v", name, role.Rules, want)
	}
	rb := objectIn[rbacv1.RoleBinding](t, objs, "RoleBinding", ns, name)
	if rb.RoleRef.Name != name || len(rb.Subjects) != 1 || rb.Subjects[0].Name != sa.Name || rb.Subjects[0].Namespace != ns {
		t.Errorf("RoleBinding %s: %+v %+v", name, rb.RoleRef, rb.Subjects)
	}
	ds := objectIn[appsv1.DaemonSet](t, objs, "DaemonSet", ns, name)
	pod := ds.Spec.Template.Spec
	if !pod.HostNetwork || !pod.HostPID || pod.ServiceAccountName != name || pod.PriorityClassName != "system-node-critical" {
		t.Errorf("DaemonSet %s: hostNetwork %v, hostPID %v, serviceAccountName %q, priorityClassName %q", name,
			pod.HostNetwork, pod.HostPID, pod.ServiceAccountName, pod.PriorityClassName)
	}
	if len(pod.Tolerations) != 1 || pod.Tolerations[0].Operator != corev1.TolerationOpExists || pod.Tolerations[0].Key != "" {
		t.Errorf("DaemonSet %s: tolerations %+v, want every taint tolerated", name, pod.Tolerations)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("DaemonSet %s: %d containers", name, len(pod.Containers))
	}
	c := pod.Containers[0]
	if !reflect.DeepEqual(c.Args, []string{"fence"}) || c.SecurityContext == nil || c.SecurityContext.Privileged == nil ||
		!*c.SecurityContext.Privileged || c.LivenessProbe != nil || c.ReadinessProbe == nil {
		t.Errorf("DaemonSet %s: args %v, securityContext %+v, liveness %v, readiness %v", name, c.Args, c.SecurityContext,
			c.LivenessProbe != nil, c.ReadinessProbe != nil)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			env[e.Name] = "field:" + e.ValueFrom.FieldRef.FieldPath
		} else {
			env[e.Name] = e.Value
		}
	}
	wantEnv := map[string]string{"NODE_NAME": "field:spec.nodeName", "POD_IP": "field:status.podIP",
		"NODE_RECOVERY_FENCE_PEER_SECRET_FILE": "/etc/noderecover-fence/peer-secret", "NODE_RECOVERY_FENCE_LISTEN": ":9466"}
	if !reflect.DeepEqual(env, wantEnv) {
		t.Errorf("DaemonSet %s: env %v, want %v", name, env, wantEnv)
	}
	var secret, dev bool
	for _, v := range pod.Volumes {
		if v.Secret != nil && v.Secret.SecretName == name && v.Secret.DefaultMode != nil && *v.Secret.DefaultMode == 0o400 {
			secret = true
		}
		if v.HostPath != nil && v.HostPath.Path == "/dev" && v.HostPath.Type != nil && *v.HostPath.Type == corev1.HostPathDirectory {
			dev = true
		}
	}
	if !secret || !dev {
		t.Errorf("DaemonSet %s: the secret %s (mode 0400) mounted %v, the host's /dev mounted %v", name, name, secret, dev)
	}
	// the watcher's selector takes none of the agents' pods
	dep := objectOf[appsv1.Deployment](t, objs, "Deployment", "noderecover")
	match := true
	for k, v := range dep.Spec.Selector.MatchLabels {
		match = match && ds.Spec.Template.Labels[k] == v
	}
	if match {
		t.Errorf("the Deployment's selector %v takes the agents' pods %v", dep.Spec.Selector.MatchLabels, ds.Spec.Template.Labels)
	}
}
