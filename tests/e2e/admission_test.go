package e2e

// A patch the API server refuses with a 422 that is not a failed resourceVersion test: here a
// ValidatingAdmissionPolicy (in-tree CEL admission, no webhook server) with reason Invalid.
// noderecover must report the API's message and fail the pass, not take it for "changed since
// it was listed" (which would hide it and retry it forever without a word).

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const admissionMessage = "out-of-service taints are applied by hand on s7-denied"

func scenarioAdmissionDenied(t *testing.T, c *cluster, tokenFile string) {
	ctx := context.Background()
	k := newKubelets(c.cs)
	defer k.removeAll(ctx)
	const x = "s7-denied"
	if _, err := k.add(ctx, nodeSpec{name: x}); err != nil {
		t.Fatal(err)
	}

	fail := admissionv1.Fail
	invalid := metav1.StatusReasonInvalid
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-no-oos-on-s7"},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Update},
					Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"},
						Resources: []string{"nodes"}},
				},
			}}},
			Validations: []admissionv1.Validation{{
				Expression: "object.metadata.name != '" + x + "' || !has(object.spec.taints) || " +
					"!object.spec.taints.exists(t, t.key == 'node.kubernetes.io/out-of-service')",
				Message: admissionMessage,
				Reason:  &invalid,
			}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-no-oos-on-s7"},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy.Name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny}},
	}
	ar := c.cs.AdmissionregistrationV1()
	if _, err := ar.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer ar.ValidatingAdmissionPolicies().Delete(ctx, policy.Name, metav1.DeleteOptions{})
	if _, err := ar.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer ar.ValidatingAdmissionPolicyBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{})

	// The policy takes effect once the API server's informers have it: wait until a server
	// dry-run of the same taint is denied.
	probe := []byte(`[{"op":"add","path":"/spec/taints","value":[{"key":"node.kubernetes.io/out-of-service","value":"nodeshutdown","effect":"NoExecute"}]}]`)
	poll(t, c, "the admission policy in force", 30*time.Second, func() bool {
		_, err := c.cs.CoreV1().Nodes().Patch(ctx, x, types.JSONPatchType, probe, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		var se *apierrors.StatusError
		return err != nil && errors.As(err, &se) && se.ErrStatus.Code == 422 && strings.Contains(se.ErrStatus.Message, admissionMessage)
	})

	ltt := waitUnknown(t, c, x)
	sleepUntil(ltt.Add(time.Duration(taintAfter+1) * time.Second))
	out, code := runOnce(t, append(connArgs(c, tokenFile), "--taint-after", strconv.Itoa(taintAfter), "--self-node", "e2e-runner")...)
	if code != 1 {
		t.Errorf("once against a patch denied by admission: exit %d, want 1", code)
	}
	if !strings.Contains(out, admissionMessage) {
		t.Errorf("once did not log the API's message %q:\n%s", admissionMessage, out)
	}
	if strings.Contains(out, "changed since it was listed") {
		t.Errorf("once took the admission denial for a changed node:\n%s", out)
	}
	if hasOurTaint(getNode(t, c, x)) {
		t.Errorf("%s tainted although admission denied it", x)
	}
	measure(t, "scenario 7: a patch denied by a ValidatingAdmissionPolicy (422 Invalid): once exit %d, message logged", code)
}
