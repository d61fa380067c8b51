package cluster_test

import (
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/testing/sim/controller"
	"github.com/sandgate/sandgate/internal/testing/sim/simtest"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// statusLog records every status of a Sandbox seen through a watch.
type statusLog struct {
	mu   sync.Mutex
	seen []agents.SandboxStatus
}

func recordStatus(e *simtest.Env, name string) *statusLog {
	e.T.Helper()
	w, err := e.SB.Sandboxes(e.NS).Watch(e.T.Context(), metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		e.T.Fatal(err)
	}
	l := &statusLog{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if sb, ok := ev.Object.(*agents.Sandbox); ok && ev.Type == watch.Modified {
				l.mu.Lock()
				l.seen = append(l.seen, *sb.Status.DeepCopy())
				l.mu.Unlock()
			}
		}
	}()
	e.T.Cleanup(func() { w.Stop(); <-done })
	return l
}

func (l *statusLog) any(f func(agents.SandboxStatus) bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.seen {
		if f(s) {
			return true
		}
	}
	return false
}

func TestSuspendKeepsVolumeAndResumeGetsNewPod(t *testing.T) {
	const resume = 300 * time.Millisecond
	e := start(t, 1, controller.Delays{Resume: resume})
	e.WaitPool(1)
	claim := e.CreateClaim("dsh-carol", agents.PodMetadata{})
	before := e.ReadyPod("dsh-carol")
	name := before.Name
	cookie := e.Cookie(before, "carol")
	if code, body := do(t, http.MethodPut, before, "/api/files/notes/today.txt", cookie, "remember me"); code != http.StatusOK && code != http.StatusCreated {
		t.Fatalf("upload: %d %s", code, body)
	}
	pvc, err := e.Core.CoreV1().PersistentVolumeClaims(e.NS).Get(t.Context(), controller.ClaimName("dsh-home", name), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !testkit.Exists(filepath.Join(volumeDir(e, pvc), "workspace", "notes", "today.txt")) {
		t.Fatal("uploaded file not in the volume directory")
	}

	statuses := recordStatus(e, name)
	e.SetMode(name, agents.OperatingModeSuspended)
	e.Eventually(testkit.Timeout, func() string {
		if _, err := e.Pod(name); !apierrors.IsNotFound(err) {
			return fmt.Sprintf("pod still there (%v)", err)
		}
		sb, err := e.Sandbox(name)
		if err != nil {
			return err.Error()
		}
		ready, susp := simtest.Condition(sb.Status.Conditions, agents.ConditionReady), simtest.Condition(sb.Status.Conditions, agents.ConditionSuspended)
		if ready.Status != metav1.ConditionFalse || ready.Reason != agents.ReasonSandboxSuspended {
			return fmt.Sprintf("Ready %+v", ready)
		}
		if susp.Status != metav1.ConditionTrue || susp.Reason != agents.ReasonPodTerminated {
			return fmt.Sprintf("Suspended %+v", susp)
		}
		if len(sb.Status.PodIPs) > 0 || sb.Status.NodeName != "" || sb.Annotations[agents.AnnotationPodName] != "" {
			return fmt.Sprintf("pod fields not cleared: %v %q %q", sb.Status.PodIPs, sb.Status.NodeName, sb.Annotations[agents.AnnotationPodName])
		}
		if sb.Status.ServiceFQDN == "" {
			return "serviceFQDN cleared"
		}
		return ""
	})
	if !statuses.any(func(s agents.SandboxStatus) bool {
		c := simtest.Condition(s.Conditions, agents.ConditionSuspended)
		return c.Reason == agents.ReasonPodTerminating && c.Status == metav1.ConditionFalse && len(s.PodIPs) == 1 && s.NodeName != ""
	}) {
		t.Error("never saw Suspended=False/PodTerminating with the old podIPs and nodeName kept")
	}
	if _, err := e.Core.CoreV1().PersistentVolumeClaims(e.NS).Get(t.Context(), pvc.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("volume claim gone after suspend: %v", err)
	}
	if _, err := e.Core.CoreV1().Services(e.NS).Get(t.Context(), name, metav1.GetOptions{}); err != nil {
		t.Errorf("service gone after suspend: %v", err)
	}
	if r := simtest.Condition(e.Claim(claim.Name).Status.Conditions, agents.ConditionReady); r.Reason != agents.ReasonSandboxSuspended {
		t.Errorf("claim Ready %+v does not mirror the suspend", r)
	}

	begin := time.Now()
	e.SetMode(name, agents.OperatingModeRunning)
	var after *corev1.Pod
	e.Eventually(testkit.Timeout, func() string {
		sb, err := e.Sandbox(name)
		if err != nil {
			return err.Error()
		}
		if r := simtest.Condition(sb.Status.Conditions, agents.ConditionReady); r.Status != metav1.ConditionTrue {
			return fmt.Sprintf("not Ready after resume: %+v", r)
		}
		if s := simtest.Condition(sb.Status.Conditions, agents.ConditionSuspended); s.Status != metav1.ConditionFalse || s.Reason != agents.ReasonNotSuspended {
			return fmt.Sprintf("Suspended %+v, want False/NotSuspended", s)
		}
		if after, err = e.Pod(name); err != nil {
			return err.Error()
		}
		return ""
	})
	if took := time.Since(begin); took < resume {
		t.Errorf("Ready %v after resume, before the %v resume delay", took, resume)
	}
	if after.UID == before.UID {
		t.Error("resume kept the old pod UID")
	}
	code, body := do(t, http.MethodGet, after, "/api/files/notes/today.txt", e.Cookie(after, "carol"), "")
	if code != http.StatusOK || body != "remember me" {
		t.Errorf("file after resume: %d %q", code, body)
	}
}

func TestClaimDeleteCollectsEverything(t *testing.T) {
	e := start(t, 1, controller.Delays{})
	e.WaitPool(1)
	claim := e.CreateClaim("dsh-dave", agents.PodMetadata{})
	name := e.WaitClaimReady("dsh-dave", testkit.Timeout).Status.Sandbox.Name
	pvc, err := e.Core.CoreV1().PersistentVolumeClaims(e.NS).Get(t.Context(), controller.ClaimName("dsh-home", name), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	volume := volumeDir(e, pvc)
	e.Eventually(testkit.Timeout, func() string {
		if !testkit.Exists(volume) {
			return "no volume directory " + volume
		}
		return ""
	})

	if err := e.SB.SandboxClaims(e.NS).Delete(t.Context(), claim.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.Eventually(testkit.Timeout, func() string {
		if _, err := e.Sandbox(name); !apierrors.IsNotFound(err) {
			return fmt.Sprintf("sandbox still there (%v)", err)
		}
		if _, err := e.Pod(name); !apierrors.IsNotFound(err) {
			return fmt.Sprintf("pod still there (%v)", err)
		}
		if _, err := e.Core.CoreV1().PersistentVolumeClaims(e.NS).Get(t.Context(), pvc.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Sprintf("volume claim still there (%v)", err)
		}
		if _, err := e.Core.CoreV1().Services(e.NS).Get(t.Context(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Sprintf("service still there (%v)", err)
		}
		if testkit.Exists(volume) {
			return "volume directory still there"
		}
		return ""
	})
}

func TestContainerCrashRestartsWithNewToken(t *testing.T) {
	e := start(t, 1, controller.Delays{})
	e.WaitPool(1)
	e.CreateClaim("dsh-erin", agents.PodMetadata{})
	pod := e.ReadyPod("dsh-erin")
	name := pod.Name
	logDir := filepath.Join(e.Cluster.Kubelet.LogRoot(pod.Spec.NodeName), e.NS+"_"+name+"_"+string(pod.UID), "dsh")
	first := testkit.LaunchToken(t, filepath.Join(logDir, "0.log"))

	if err := e.Cluster.Kubelet.KillContainer(e.NS, name); err != nil {
		t.Fatal(err)
	}
	e.Eventually(testkit.Timeout, func() string {
		p, err := e.Pod(name)
		if err != nil {
			return err.Error()
		}
		if len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].RestartCount != 1 || !p.Status.ContainerStatuses[0].Ready {
			return fmt.Sprintf("container statuses %+v", p.Status.ContainerStatuses)
		}
		sb, err := e.Sandbox(name)
		if err != nil {
			return err.Error()
		}
		if r := simtest.Condition(sb.Status.Conditions, agents.ConditionReady); r.Status != metav1.ConditionTrue {
			return fmt.Sprintf("sandbox Ready %+v", r)
		}
		pod = p
		return ""
	})
	if second := testkit.LaunchToken(t, filepath.Join(logDir, "1.log")); second == first {
		t.Error("the restarted container printed the old token")
	}
	if code, _ := do(t, http.MethodGet, pod, "/api/messages", e.Cookie(pod, "erin"), ""); code != http.StatusOK {
		t.Errorf("request with a cookie from the new token: %d", code)
	}
}
