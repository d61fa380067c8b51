package agents

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestCurrentPodState: whether the current pod stopped for good, or the
// controller gave up, is read from Ready and its reason on every release;
// v1.0.13's Finished, which survives a suspend and outlives the pod that
// finished, never decides it alone.
func TestCurrentPodState(t *testing.T) {
	ready := func(status metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: ConditionReady, Status: status, Reason: reason, Message: "m"}
	}
	finished := metav1.Condition{Type: ConditionFinished, Status: metav1.ConditionTrue, Reason: ReasonPodFailed}
	notFinished := metav1.Condition{Type: ConditionFinished, Status: metav1.ConditionFalse, Reason: "NotFinished"}
	for _, tt := range []struct {
		name                string
		conds               []metav1.Condition
		terminated, invalid bool
	}{
		{"pod failed", []metav1.Condition{ready(metav1.ConditionFalse, ReasonPodFailed), finished}, true, false},
		{"pod succeeded", []metav1.Condition{ready(metav1.ConditionFalse, ReasonPodSucceeded)}, true, false},
		{"v1.0.13: finished kept after a wake, new pod ready", []metav1.Condition{finished, ready(metav1.ConditionTrue, ReasonDependenciesReady)}, false, false},
		{"v1.0.13: finished kept while the new pod starts", []metav1.Condition{finished, ready(metav1.ConditionFalse, ReasonDependenciesNotReady)}, false, false},
		{"v1.0.13: finished kept across a suspend", []metav1.Condition{finished, ready(metav1.ConditionFalse, ReasonSandboxSuspended)}, false, false},
		{"v1.0.13: not finished", []metav1.Condition{notFinished, ready(metav1.ConditionTrue, ReasonDependenciesReady)}, false, false},
		{"finished without Ready", []metav1.Condition{finished}, false, false},
		{"starting", []metav1.Condition{ready(metav1.ConditionFalse, ReasonDependenciesNotReady)}, false, false},
		{"suspended", []metav1.Condition{ready(metav1.ConditionFalse, ReasonSandboxSuspended)}, false, false},
		{"ready", []metav1.Condition{ready(metav1.ConditionTrue, ReasonDependenciesReady)}, false, false},
		{"invalid configuration", []metav1.Condition{ready(metav1.ConditionFalse, ReasonInvalidConfiguration)}, false, true},
		{"no conditions", nil, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sb := &Sandbox{Status: SandboxStatus{Conditions: tt.conds}}
			if got := Terminated(sb); got != tt.terminated {
				t.Errorf("Terminated = %v, want %v", got, tt.terminated)
			}
			msg, invalid := InvalidConfiguration(sb)
			if invalid != tt.invalid || (invalid && msg != "m") {
				t.Errorf("InvalidConfiguration = %q, %v, want %v", msg, invalid, tt.invalid)
			}
			if Invalid(sb) != tt.invalid {
				t.Errorf("Invalid = %v, want %v", Invalid(sb), tt.invalid)
			}
		})
	}
}
