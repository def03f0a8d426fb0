package e2e

// Static checks of what `noderecover manifests` prints (and deploy/ holds): the permissions
// and pod settings the README promises. TestNodeRecover applies the same output to the real
// control plane and runs the watcher with its ServiceAccount's token.

import (
	"reflect"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

func objectOf[T any](t *testing.T, objs []*unstructured.Unstructured, kind, name string) *T {
	t.Helper()
	return objectIn[T](t, objs, kind, "", name)
}

// objectIn is objectOf in namespace ns ("": any), for a name two namespaces use (the Roles).
func objectIn[T any](t *testing.T, objs []*unstructured.Unstructured, kind, ns, name string) *T {
	t.Helper()
	for _, u := range objs {
		if u.GetKind() == kind && u.GetName() == name && (ns == "" || u.GetNamespace() == ns) {
			var out T
			if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, &out, true); err != nil {
				t.Fatalf("%s %s: %v", kind, name, err)
			}
			return &out
		}
	}
	t.Fatalf("no %s %s", kind, name)
	return nil
}

// watchVerb is the verb a watching binary's ClusterRole adds on nodes (none for one that only polls).
func watchVerb(t *testing.T) []string {
	if binaryWatches(t) {
		return []string{"watch"}
	}
	return nil
}

func checkRole(t *testing.T, what string, objs []*unstructured.Unstructured, verbs ...string) {
	role := objectOf[rbacv1.ClusterRole](t, objs, "ClusterRole", saName)
	var got []string
	for _, r := range role.Rules {
		if !reflect.DeepEqual(r.APIGroups, []string{""}) || !reflect.DeepEqual(r.Resources, []string{"nodes"}) ||
			len(r.ResourceNames) != 0 || len(r.NonResourceURLs) != 0 {
			t.Errorf("%s: ClusterRole %s rule %+v is not about core nodes alone", what, saName, r)
		}
		got = append(got, r.Verbs...)
	}
	sort.Strings(got)
	sort.Strings(verbs)
	if !reflect.DeepEqual(got, verbs) {
		t.Errorf("%s: ClusterRole %s grants %v on nodes, want exactly %v", what, saName, got, verbs)
	}
	b := objectOf[rbacv1.ClusterRoleBinding](t, objs, "ClusterRoleBinding", saName)
	want := []rbacv1.Subject{{Kind: "ServiceAccount", Name: saName, Namespace: saNamespace}}
	if b.RoleRef.Name != saName || b.RoleRef.Kind != "ClusterRole" || !reflect.DeepEqual(b.Subjects, want) {
		t.Errorf("%s: ClusterRoleBinding %s = %+v / %+v", what, saName, b.RoleRef, b.Subjects)
	}
	// leader election: a Role in its own namespace, get, create and update on leases; and the
	// fence (issue 23, --fence prefer by default): get and patch on the agents' Leases there
	lr := objectIn[rbacv1.Role](t, objs, "Role", saNamespace, saName)
	leaseRules := []rbacv1.PolicyRule{
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "patch"}},
	}
	if lr.Namespace != saNamespace || !reflect.DeepEqual(lr.Rules, leaseRules) {
		t.Errorf("%s: Role %s = %+v, want get, create, update, then get, list, patch on leases in %s", what, saName, lr, saNamespace)
	}
	rb := objectIn[rbacv1.RoleBinding](t, objs, "RoleBinding", saNamespace, saName)
	if rb.Namespace != saNamespace || rb.RoleRef.Kind != "Role" || rb.RoleRef.Name != saName || !reflect.DeepEqual(rb.Subjects, want) {
		t.Errorf("%s: RoleBinding %s = %+v / %+v", what, saName, rb.RoleRef, rb.Subjects)
	}
	// Events: create on events.k8s.io events, in default alone (a Role, never a ClusterRole)
	// named apart from the Lease's Role, so a kustomize overlay's one namespace holds both
	er := objectIn[rbacv1.Role](t, objs, "Role", "default", saName+"-events")
	wantRules := []rbacv1.PolicyRule{{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create"}}}
	if er.Namespace != "default" || !reflect.DeepEqual(er.Rules, wantRules) {
		t.Errorf("%s: Role %s in %q grants %+v, want %+v in default", what, saName, er.Namespace, er.Rules, wantRules)
	}
	rb = objectIn[rbacv1.RoleBinding](t, objs, "RoleBinding", "default", saName+"-events")
	if rb.Namespace != "default" || rb.RoleRef.Name != saName+"-events" || rb.RoleRef.Kind != "Role" || !reflect.DeepEqual(rb.Subjects, want) {
		t.Errorf("%s: RoleBinding %s in %q = %+v / %+v", what, saName, rb.Namespace, rb.RoleRef, rb.Subjects)
	}
	for _, u := range objs {
		switch u.GetKind() {
		case "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Deployment":
		default:
			t.Errorf("%s: unexpected %s %s", what, u.GetKind(), u.GetName())
		}
	}
}

func checkPod(t *testing.T, file string, objs []*unstructured.Unstructured, prune bool) {
	d := objectOf[appsv1.Deployment](t, objs, "Deployment", "noderecover")
	if d.Namespace != saNamespace || d.Spec.Template.Spec.ServiceAccountName != saName {
		t.Errorf("%s: namespace %q, serviceAccountName %q", file, d.Namespace, d.Spec.Template.Spec.ServiceAccountName)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("%s: want two replicas (one leads)", file)
	}
	ps := d.Spec.Template.Spec
	psc := ps.SecurityContext
	if psc == nil || psc.RunAsUser == nil || *psc.RunAsUser != 65532 || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: pod securityContext %+v", file, psc)
	}
	if len(ps.Containers) != 1 {
		t.Fatalf("%s: %d containers", file, len(ps.Containers))
	}
	ctr := ps.Containers[0]
	sc := ctr.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !reflect.DeepEqual(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
		t.Errorf("%s: container securityContext %+v", file, sc)
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range ctr.Env {
		env[e.Name] = e
	}
	if e, ok := env["NODE_RECOVERY_SELF_NODE"]; !ok || e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != "spec.nodeName" {
		t.Errorf("%s: NODE_RECOVERY_SELF_NODE must come from spec.nodeName", file)
	}
	if e, ok := env["NODE_RECOVERY_LEADER_ELECT"]; !ok || e.Value != "true" {
		t.Errorf("%s: two replicas need NODE_RECOVERY_LEADER_ELECT=true", file)
	}
	if e, ok := env["POD_NAME"]; !ok || e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.name" {
		t.Errorf("%s: POD_NAME must come from metadata.name", file)
	}
	if e, ok := env["NODE_RECOVERY_AFTER_SECONDS"]; !ok || e.Value == "" {
		t.Errorf("%s: NODE_RECOVERY_AFTER_SECONDS (required) not set", file)
	}
	if _, ok := env["NODE_RECOVERY_PRUNE_AFTER_SECONDS"]; ok != prune {
		t.Errorf("%s: NODE_RECOVERY_PRUNE_AFTER_SECONDS set=%v, want %v", file, ok, prune)
	}
	tol := map[string]corev1.Toleration{}
	for _, tl := range ps.Tolerations {
		tol[tl.Key] = tl
	}
	for _, key := range []string{"node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready"} {
		tl, ok := tol[key]
		if !ok || tl.Effect != corev1.TaintEffectNoExecute || tl.TolerationSeconds == nil || *tl.TolerationSeconds != 10 {
			t.Errorf("%s: want a 10s NoExecute toleration for %s, got %+v", file, key, tl)
		}
	}
	_, cpTol := tol[cpLabel]
	pinned := false
	if a := ps.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, ex := range term.MatchExpressions {
				if ex.Key == cpLabel && ex.Operator == corev1.NodeSelectorOpExists {
					pinned = true
				}
			}
		}
	}
	if pinned != prune || cpTol != prune {
		t.Errorf("%s: pinned to control-plane=%v, tolerates its taint=%v; want %v (only with pruning)", file, pinned, cpTol, prune)
	}
}

func TestManifests(t *testing.T) {
	for _, prune := range []bool{false, true} {
		what := "noderecover manifests " + strings.Join(manifestsArgs(prune), " ")
		objs := manifests(t, prune)
		if prune {
			checkRole(t, what, objs, append([]string{"get", "list", "patch", "delete"}, watchVerb(t)...)...)
		} else {
			checkRole(t, what, objs, append([]string{"get", "list", "patch"}, watchVerb(t)...)...)
		}
		sa := objectOf[corev1.ServiceAccount](t, objs, "ServiceAccount", saName)
		if sa.Namespace != saNamespace {
			t.Errorf("%s: ServiceAccount namespace %q", what, sa.Namespace)
		}
		objectOf[corev1.Namespace](t, objs, "Namespace", saNamespace)
		checkPod(t, what, objs, prune)
	}
	// deploy/ is that output (tests/standin/test_manifests.py compares the bytes)
	checkPod(t, "deploy/noderecover.yaml", readManifest(t, "noderecover.yaml"), false)
	checkPod(t, "deploy/noderecover-prune.yaml", readManifest(t, "noderecover-prune.yaml"), true)
}
