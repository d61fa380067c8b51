package feed

import (
	"context"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/informer"
)

// TestIndexResolves feeds two users on two nodes to a real Index and
// checks that n1 routes alice to her local pod and bob to n2.
func TestIndexResolves(t *testing.T) {
	users := []string{"alice", "bob"}
	nodes := []Node{{Name: "n1", IP: "127.0.0.1"}, {Name: "n2", IP: "127.0.0.2"}}
	lists := Build(Options{
		Namespace: "bench", Users: len(users), User: func(i int) string { return users[i] },
		Nodes: nodes, Place: func(i int) int { return i }, Local: "n1", PodIP: "127.0.0.1", PodPort: 3080,
	})
	idx, err := informer.New(lists.Informer(informer.Options{Namespace: "bench", NodeName: "n1"}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- idx.Run(ctx) }()
	defer func() { cancel(); <-done }()
	if err := idx.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	lists.Drop()
	a, err := idx.Lookup("alice")
	if err != nil || !a.Route.Local || a.Route.Pod.Addr != "127.0.0.1:3080" || !a.Account.TokenMatches(Token("alice")) {
		t.Errorf("alice: %+v, %v", a, err)
	}
	b, err := idx.Lookup("bob")
	if err != nil || b.Route.Local || b.Route.NodeIP != "127.0.0.2" || b.Route.State != informer.StateReady {
		t.Errorf("bob: %+v, %v", b, err)
	}
}
