package ucp

import (
	"testing"

	"github.com/ucgo/ucgo/uct"
)

// Every ucp atomic names the transport operation of the same name.
func TestAtomicOpNames(t *testing.T) {
	for _, c := range []struct {
		op   AtomicOp
		u    uct.AtomicOp
		name string
	}{{AtomicAdd, uct.AtomicAdd, "add"}, {AtomicAnd, uct.AtomicAnd, "and"}, {AtomicOr, uct.AtomicOr, "or"},
		{AtomicXor, uct.AtomicXor, "xor"}, {AtomicSwap, uct.AtomicSwap, "swap"}, {AtomicCSwap, uct.AtomicCSwap, "cswap"}} {
		if c.op.uct() != c.u || c.op.String() != c.name {
			t.Errorf("%v: uct %v, want %v named %q", c.op, c.op.uct(), c.u, c.name)
		}
	}
	if s := AtomicOp(99).String(); s != "atomic(99)" {
		t.Errorf("AtomicOp(99) = %q", s)
	}
}
