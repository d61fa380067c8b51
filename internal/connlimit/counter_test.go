package connlimit

import "testing"

// TestCounter: a key holds up to max, gives back what it took, and is
// forgotten once it holds nothing.
func TestCounter(t *testing.T) {
	var c Counter[string]
	if !c.Take("a", 2) || !c.Take("a", 2) || c.Take("a", 2) {
		t.Fatal("a key takes exactly max")
	}
	if !c.Take("b", 2) || c.Count("a") != 2 || c.Count("b") != 1 {
		t.Fatalf("counts a=%d b=%d", c.Count("a"), c.Count("b"))
	}
	c.Give("a")
	c.Give("a")
	c.Give("b")
	if len(c.n) != 0 {
		t.Errorf("keys holding nothing kept: %v", c.n)
	}
}
