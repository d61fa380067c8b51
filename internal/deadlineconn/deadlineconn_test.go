package deadlineconn

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

// TestSilentPeerTimesOut: a Read from a peer that sends nothing and a Write
// to a peer that reads nothing each fail once their timeout passes.
func TestSilentPeerTimesOut(t *testing.T) {
	for name, op := range map[string]func(*Conn) error{
		"read":  func(c *Conn) error { _, err := c.Read(make([]byte, 1)); return err },
		"write": func(c *Conn) error { _, err := c.Write([]byte("x")); return err },
	} {
		t.Run(name, func(t *testing.T) {
			a, b := net.Pipe()
			t.Cleanup(func() { a.Close(); b.Close() })
			if err := op(New(a, 20*time.Millisecond, 20*time.Millisecond)); !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("%s = %v, want a deadline error", name, err)
			}
		})
	}
}

// TestNoTimeoutNoDeadline: a zero duration sets no deadline: the Read
// waits for the peer.
func TestNoTimeoutNoDeadline(t *testing.T) {
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	go b.Write([]byte("x"))
	if n, err := New(a, 0, 0).Read(make([]byte, 1)); n != 1 || err != nil {
		t.Errorf("Read = %d, %v", n, err)
	}
}

// TestExtendIsAmortised: calls within a sixteenth of the timeout of the last
// renewal set no new deadline.
func TestExtendIsAmortised(t *testing.T) {
	var d Deadline
	var set []time.Time
	for range 100 {
		d.Extend(func(at time.Time) error { set = append(set, at); return nil }, time.Hour)
	}
	if len(set) != 1 || time.Until(set[0]) < 59*time.Minute {
		t.Errorf("deadlines set %v, want one about an hour ahead", set)
	}
}
