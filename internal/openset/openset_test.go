package openset

import (
	"context"
	"slices"
	"testing"
)

func TestCloseRefusesNewMembersAndReturnsOpenOnes(t *testing.T) {
	var s Set[int]
	for _, v := range []int{1, 2, 3} {
		if !s.Add(v) {
			t.Fatalf("Add(%d) refused before Close", v)
		}
	}
	s.Remove(2)
	if got := s.Len(); got != 2 {
		t.Errorf("Len = %d, want 2", got)
	}
	if got := slices.Sorted(slices.Values(s.Members())); !slices.Equal(got, []int{1, 3}) {
		t.Errorf("Members = %v, want [1 3]", got)
	}
	if got := slices.Sorted(slices.Values(s.Close())); !slices.Equal(got, []int{1, 3}) {
		t.Errorf("Close = %v, want [1 3]", got)
	}
	if s.Add(4) {
		t.Error("Add after Close was taken")
	}
	if got := s.Len(); got != 2 {
		t.Errorf("Len after a refused Add = %d, want 2", got)
	}
}

func TestWaitReturnsOnceEveryMemberIsRemoved(t *testing.T) {
	var s Set[int]
	s.Add(1)
	s.Add(2)
	done := make(chan struct{})
	go func() { s.Wait(); close(done) }()
	s.Remove(1)
	select {
	case <-done:
		t.Fatal("Wait returned with a member still open")
	default:
	}
	s.Remove(2)
	<-done
}

func TestDrainEndsTheMembersLeftWhenCtxEnds(t *testing.T) {
	var s Set[int]
	s.Add(1)
	s.Add(2)
	s.Remove(1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var ended []int
	s.Drain(ctx, func(v int) { ended = append(ended, v); s.Remove(v) })
	if !slices.Equal(ended, []int{2}) {
		t.Errorf("Drain ended %v, want [2]", ended)
	}
	s.Drain(context.Background(), func(v int) { t.Errorf("Drain ended %d with no member left", v) })
}
