package match_test

import (
	"fmt"

	"github.com/ucgo/ucgo/ucp/internal/match"
)

// Tags carry the sender's rank in bits 32-47, as a worker might lay them out.
const srcMask = 0xffff << 32

func tag(rank, t uint64) uint64 { return rank<<32 | t }

func Example() {
	m := match.New(match.Config{SourceMask: srcMask})
	m.SetSourceTag(1, tag(1, 0))
	m.SetSourceTag(2, tag(2, 0))

	// A receive from rank 1, tag 7, and a wildcard-source receive of tag 7.
	r1 := &match.Recv{Tag: tag(1, 7), Mask: ^uint64(0), Data: "recv from 1"}
	wild := &match.Recv{Tag: tag(0, 7), Mask: ^uint64(srcMask), Data: "recv from any"}
	m.PostRecv(r1)
	m.PostRecv(wild)

	// A message from rank 2 matches the wildcard.
	if r := m.Arrive(&match.Msg{Src: 2, Tag: tag(2, 7), Data: "hello"}); r != nil {
		fmt.Println("matched:", r.Data)
	}

	// Rank 2 fails: matching stops; the wildcard receive learns of it.
	m.PostRecv(wild)
	for _, r := range m.Fail(2) {
		fmt.Println("failure pending:", r.Data)
	}
	m.Arrive(&match.Msg{Src: 1, Tag: tag(1, 7), Data: "late"}) // queued
	posted, unexpected := m.Len()
	fmt.Println("suspended:", m.Suspended(), posted, unexpected)

	// Purging rank 2 restarts matching.
	_, _, pairs := m.Purge(2)
	for _, p := range pairs {
		fmt.Println("resumed:", p.Recv.Data, "<-", p.Msg.Data)
	}
	// Output:
	// matched: recv from any
	// failure pending: recv from any
	// suspended: true 2 1
	// resumed: recv from 1 <- late
}

func ExampleQueue() {
	q := match.NewQueue()
	// The first fragments of two large messages from rank 3, one from rank 4.
	q.Add(&match.Frag{Src: 3, ID: 1, Data: "3/1"})
	q.Add(&match.Frag{Src: 3, ID: 2, Data: "3/2"})
	q.Add(&match.Frag{Src: 4, ID: 1, Data: "4/1"})

	// The last fragment of 4/1 completes it.
	fmt.Println("done:", q.Take(4, 1).Data)

	// Rank 3 is purged: its partial messages are dropped.
	for _, f := range q.Purge(3) {
		fmt.Println("dropped:", f.Data)
	}
	fmt.Println("left:", q.Len())
	// Output:
	// done: 4/1
	// dropped: 3/1
	// dropped: 3/2
	// left: 0
}
