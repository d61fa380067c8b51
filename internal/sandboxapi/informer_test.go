package sandboxapi_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

func TestInformerSeesCreateUpdateDelete(t *testing.T) {
	ns := testkit.NewNamespace(t)
	client := ns.SB.SandboxClaims(ns.Name)
	events := make(chan string, 10)
	inf := sandboxapi.NewInformer(client, &extensions.SandboxClaim{}, sandboxapi.InformerOptions{})
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { events <- "add " + obj.(*extensions.SandboxClaim).Spec.WarmPoolRef.Name },
		UpdateFunc: func(_, obj any) {
			events <- "update " + obj.(*extensions.SandboxClaim).Spec.WarmPoolRef.Name
		},
		DeleteFunc: func(obj any) {
			if c, ok := obj.(*extensions.SandboxClaim); ok {
				events <- "delete " + c.Name
			}
		},
	}); err != nil {
		t.Fatal(err)
	}
	go inf.RunWithContext(t.Context())
	syncCtx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	expect := func(want string) {
		t.Helper()
		if got := testkit.Receive(t, "event "+want, events); got != want {
			t.Fatalf("event %q, want %q", got, want)
		}
	}
	claim, err := client.Create(t.Context(), &extensions.SandboxClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: extensions.SandboxClaimSpec{WarmPoolRef: extensions.WarmPoolRef{Name: "p1"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	expect("add p1")
	claim.Spec.WarmPoolRef.Name = "p2"
	if _, err := client.Update(t.Context(), claim, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("update p2")
	if err := client.Delete(t.Context(), "c", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("delete c")
}

func TestKeepTransformsOnlyItsKind(t *testing.T) {
	keep := sandboxapi.Keep(func(sb *agents.Sandbox) any { return sb.Name })
	sb := &agents.Sandbox{}
	sb.Name = "sb"
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/sb", Obj: sb}
	for _, tc := range []struct {
		what string
		in   any
		want any
	}{
		{"a Sandbox", sb, "sb"},
		{"a tombstone", tomb, tomb},
		{"what it kept before", "sb", "sb"},
	} {
		if got, err := keep(tc.in); err != nil || got != tc.want {
			t.Errorf("%s: %v, %v; want %v", tc.what, got, err, tc.want)
		}
	}
}
