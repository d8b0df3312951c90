package failover

import "testing"

// TestRecvWindowInOrder: the fast path takes only the next message while
// nothing is held, and then agrees with Accept.
func TestRecvWindowInOrder(t *testing.T) {
	w := NewRecvWindow[int](8)
	var got []int
	deliver := func(_ uint64, v int) { got = append(got, v) }
	if w.InOrder(0) || w.InOrder(2) {
		t.Fatal("InOrder took a message that is not next")
	}
	if !w.InOrder(1) || w.Delivered() != 1 {
		t.Fatalf("InOrder(1): delivered %d", w.Delivered())
	}
	if w.InOrder(1) {
		t.Fatal("InOrder took a duplicate")
	}
	if v, err := w.Accept(3, 3, deliver); v != Held || err != nil {
		t.Fatalf("Accept(3) = %v, %v", v, err)
	}
	if w.InOrder(2) {
		t.Fatal("InOrder took 2 while 3 is held: 3 would never be delivered")
	}
	if v, err := w.Accept(2, 2, deliver); v != Delivered || err != nil || len(got) != 2 || w.Delivered() != 3 {
		t.Fatalf("Accept(2) = %v, %v; delivered %v up to %d", v, err, got, w.Delivered())
	}
	if !w.InOrder(4) || w.Owed() != 4 {
		t.Fatalf("InOrder(4): owed %d", w.Owed())
	}
}
