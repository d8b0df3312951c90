package ucp

import (
	"strconv"

	"github.com/ucgo/ucgo/uct"
)

// AtomicOp is an atomic operation on a remote 64-bit word
// (Endpoint.AtomicPost, Endpoint.AtomicFetch).
type AtomicOp int

// The atomic operations. AtomicPost takes Add, And, Or and Xor;
// AtomicFetch takes all of them.
const (
	AtomicAdd   AtomicOp = AtomicOp(uct.AtomicAdd)   // word += value
	AtomicAnd   AtomicOp = AtomicOp(uct.AtomicAnd)   // word &= value
	AtomicOr    AtomicOp = AtomicOp(uct.AtomicOr)    // word |= value
	AtomicXor   AtomicOp = AtomicOp(uct.AtomicXor)   // word ^= value
	AtomicSwap  AtomicOp = AtomicOp(uct.AtomicSwap)  // word = value
	AtomicCSwap AtomicOp = AtomicOp(uct.AtomicCSwap) // word = value if word == compare
)

var atomicNames = [...]string{AtomicAdd: "add", AtomicAnd: "and", AtomicOr: "or", AtomicXor: "xor", AtomicSwap: "swap", AtomicCSwap: "cswap"}

func (op AtomicOp) String() string {
	if op >= 0 && int(op) < len(atomicNames) {
		return atomicNames[op]
	}
	return "atomic(" + strconv.Itoa(int(op)) + ")"
}

// uct returns the transport's name of op: the values are the same.
func (op AtomicOp) uct() uct.AtomicOp { return uct.AtomicOp(op) }
