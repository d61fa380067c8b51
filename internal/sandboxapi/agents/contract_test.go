package agents

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTerminated(t *testing.T) {
	for _, tt := range []struct {
		name string
		cond metav1.Condition
		want bool
	}{
		{"pod failed", metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonPodFailed}, true},
		{"pod succeeded", metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonPodSucceeded}, true},
		{"finished", metav1.Condition{Type: ConditionFinished, Status: metav1.ConditionTrue}, true},
		{"not finished", metav1.Condition{Type: ConditionFinished, Status: metav1.ConditionFalse}, false},
		{"starting", metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonDependenciesNotReady}, false},
		{"suspended", metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonSandboxSuspended}, false},
		{"ready", metav1.Condition{Type: ConditionReady, Status: metav1.ConditionTrue}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sb := &Sandbox{Status: SandboxStatus{Conditions: []metav1.Condition{tt.cond}}}
			if got := Terminated(sb); got != tt.want {
				t.Errorf("Terminated = %v, want %v", got, tt.want)
			}
		})
	}
}
