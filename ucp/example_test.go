package ucp_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ucgo/ucgo/transport/shm"
	"github.com/ucgo/ucgo/ucp"
	"github.com/ucgo/ucgo/uct"
)

// Setup: a context, two workers and an endpoint from one to the other.
// The workers share a process here; across processes the address goes
// over any out-of-band channel (see package bootstrap).
func ExampleNewContext() {
	// Config{} uses shm and, where a netdev is up, rc; shm alone here.
	uc, err := ucp.NewContext(ucp.Config{Transports: []uct.Component{shm.New()}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer uc.Close()
	a, err := uc.NewWorker()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.Close()
	b, err := uc.NewWorker()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()

	addr := b.Address() // packed: the bytes to send to the peer
	lanes, err := a.LanesTo(addr)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, l := range lanes {
		fmt.Println("lane:", l.Transport)
	}
	ep, err := a.Connect(addr, ucp.EPParams{Timeout: 10 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	// Flush completes when the endpoint is wired up and idle.
	r := ep.Flush(nil)
	for end := time.Now().Add(10 * time.Second); !r.Done() && time.Now().Before(end); {
		a.Progress()
		b.Progress()
	}
	fmt.Println("flushed:", r.Err())
	// Output:
	// lane: shm
	// flushed: <nil>
}

// Tag send and receive: a receive names a tag and a mask; messages of any
// size travel eager or by rendezvous, and arrive in order.
func ExampleEndpoint_TagSend() {
	uc, err := ucp.NewContext(ucp.Config{Transports: []uct.Component{shm.New()}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer uc.Close()
	a, _ := uc.NewWorker()
	defer a.Close()
	b, _ := uc.NewWorker()
	defer b.Close()
	ep, err := a.Connect(b.Address(), ucp.EPParams{})
	if err != nil {
		fmt.Println(err)
		return
	}
	wait := func(r *ucp.Request) error {
		for end := time.Now().Add(10 * time.Second); !r.Done() && time.Now().Before(end); {
			a.Progress()
			b.Progress()
		}
		return r.Err()
	}

	const tagHello, tagBig = 0x100, 0x200
	small := make([]byte, 64)
	rs := b.TagRecv(small, tagHello, ^uint64(0), nil)
	big := bytes.Repeat([]byte("ucgo"), 1<<18) // 1 MiB: rendezvous
	rb := b.TagRecv(make([]byte, len(big)), tagBig, ^uint64(0), nil)

	ss := ep.TagSend([]byte("hello"), tagHello, nil)
	sb := ep.TagSend(big, tagBig, nil)
	for _, r := range []*ucp.Request{ss, sb, rs, rb} {
		if err := wait(r); err != nil {
			fmt.Println(err)
			return
		}
	}
	in := rs.Info()
	fmt.Printf("received %q with tag %#x\n", small[:in.Length], in.Tag)
	fmt.Println("received", rb.Info().Length, "bytes with tag", fmt.Sprintf("%#x", rb.Info().Tag))
	for _, r := range []*ucp.Request{ss, sb, rs, rb} {
		r.Release()
	}
	// Output:
	// received "hello" with tag 0x100
	// received 1048576 bytes with tag 0x200
}

// Probing: TagProbe reports an unexpected message and leaves it;
// TagProbeRemove takes it out of matching, and TagRecvMessage receives it
// into a buffer sized from its Info.
func ExampleWorker_TagProbeRemove() {
	uc, err := ucp.NewContext(ucp.Config{Transports: []uct.Component{shm.New()}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer uc.Close()
	a, _ := uc.NewWorker()
	defer a.Close()
	b, _ := uc.NewWorker()
	defer b.Close()
	ep, err := a.Connect(b.Address(), ucp.EPParams{})
	if err != nil {
		fmt.Println(err)
		return
	}
	s := ep.TagSend([]byte("probed message"), 0x300, nil)
	var info ucp.Info
	found := false
	for end := time.Now().Add(10 * time.Second); !found && time.Now().Before(end); {
		a.Progress()
		b.Progress()
		info, found = b.TagProbe(0x300, ^uint64(0))
	}
	fmt.Println("probe:", found, info.Length)
	m, ok := b.TagProbeRemove(0x300, ^uint64(0))
	if !ok {
		fmt.Println("message gone")
		return
	}
	_, again := b.TagProbe(0x300, ^uint64(0))
	fmt.Println("still matchable after remove:", again)
	buf := make([]byte, m.Info.Length)
	r := b.TagRecvMessage(buf, m, nil)
	for end := time.Now().Add(10 * time.Second); (!r.Done() || !s.Done()) && time.Now().Before(end); {
		a.Progress()
		b.Progress()
	}
	fmt.Printf("received %q: %v\n", buf, r.Err())
	// Output:
	// probe: true 14
	// still matchable after remove: false
	// received "probed message": <nil>
}

// Active messages: a handler per id runs from the receiver's Progress
// with the message's header and data.
func ExampleWorker_SetAMHandler() {
	uc, err := ucp.NewContext(ucp.Config{Transports: []uct.Component{shm.New()}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer uc.Close()
	a, _ := uc.NewWorker()
	defer a.Close()
	b, _ := uc.NewWorker()
	defer b.Close()

	const amGreet = 7
	got := 0
	b.SetAMHandler(amGreet, func(m *ucp.AMMessage) {
		// Header and Data are valid until the handler returns.
		fmt.Printf("am %d: header %q, data %q\n", m.ID, m.Header, m.Data)
		got++
	})
	ep, err := a.Connect(b.Address(), ucp.EPParams{})
	if err != nil {
		fmt.Println(err)
		return
	}
	r := ep.AMSend(amGreet, []byte("greeting"), []byte("hello, b"), nil)
	for end := time.Now().Add(10 * time.Second); (got == 0 || !r.Done()) && time.Now().Before(end); {
		a.Progress()
		b.Progress()
	}
	fmt.Println("send:", r.Err())
	// Output:
	// am 7: header "greeting", data "hello, b"
	// send: <nil>
}

// RMA with packed keys: the owner of memory packs its remote key and
// sends it with the address; the peer unpacks it on its endpoint and
// writes, reads and updates the memory without the owner's help.
func ExampleMem_PackRKey() {
	uc, err := ucp.NewContext(ucp.Config{Transports: []uct.Component{shm.New()}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer uc.Close()
	a, _ := uc.NewWorker()
	defer a.Close()
	b, _ := uc.NewWorker()
	defer b.Close()
	wait := func(r *ucp.Request) error {
		for end := time.Now().Add(10 * time.Second); !r.Done() && time.Now().Before(end); {
			a.Progress()
			b.Progress()
		}
		return r.Err()
	}

	// b exposes 4 KiB; key and address go to a out of band.
	mem, err := b.MemAlloc(4096)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer mem.Close()
	packed, raddr := mem.PackRKey(), mem.Address()

	ep, err := a.Connect(b.Address(), ucp.EPParams{})
	if err != nil {
		fmt.Println(err)
		return
	}
	rkey, err := ep.UnpackRKey(packed)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rkey.Close()

	if err := wait(ep.Put([]byte("written by a"), raddr, rkey, nil)); err != nil {
		fmt.Println(err)
		return
	}
	if err := wait(ep.Flush(nil)); err != nil { // the put is visible at b
		fmt.Println(err)
		return
	}
	fmt.Printf("b's memory: %q\n", mem.Bytes()[:12])

	back := make([]byte, 7)
	if err := wait(ep.Get(back, raddr+3, rkey, nil)); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("read back: %q\n", back)

	var old uint64
	const counter = 64 // an 8-byte aligned word
	for i := 0; i < 3; i++ {
		if err := wait(ep.AtomicFetch(ucp.AtomicAdd, 10, 0, &old, raddr+counter, rkey, nil)); err != nil {
			fmt.Println(err)
			return
		}
	}
	fmt.Println("counter before the last add:", old)
	// Output:
	// b's memory: "written by a"
	// read back: "tten by"
	// counter before the last add: 20
}

// The error model: a peer fails (here b hangs: it stops calling
// Progress, and keepalive judges it silent). a's error handler runs,
// the receive that only b could match is told (a non-final
// PendingError) and stays posted while matching is suspended; Purge
// closes the endpoint and completes that receive with b's error.
func ExampleWorker_Purge() {
	const rankMask, rankB = 0xff << 56, 1 << 56 // tag bits of the sender's rank
	uc, err := ucp.NewContext(ucp.Config{
		Transports:        []uct.Component{shm.New()},
		ErrorMode:         ucp.ErrorModePeer,
		KeepaliveInterval: 20 * time.Millisecond,
		DetectSilentPeers: true,
		SourceTagMask:     rankMask,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer uc.Close()
	a, _ := uc.NewWorker()
	defer a.Close()
	b, _ := uc.NewWorker()
	defer b.Close()

	failed := make(chan error, 1)
	ep, err := a.Connect(b.Address(), ucp.EPParams{
		SourceTag:    rankB,
		ErrorHandler: func(ep *ucp.Endpoint, err error) { failed <- err },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	// Both run for a while: b's heartbeats reach a.
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
		a.Progress()
		b.Progress()
	}
	buf := make([]byte, 8)
	r := a.TagRecv(buf, rankB|5, ^uint64(0), nil) // from b only

	// b hangs; a goes on.
	var pe *ucp.PendingError
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = r.Wait(c)
	fmt.Println("pending:", errors.As(err, &pe), ucp.Final(err), a.MatchingSuspended())
	var herr error
	for end := time.Now().Add(30 * time.Second); herr == nil && time.Now().Before(end); {
		a.Progress() // the handler runs from Progress
		select {
		case herr = <-failed:
		default:
		}
	}
	fmt.Println("handler:", errors.Is(herr, uct.ErrEndpointTimeout))

	a.Purge(ep)
	err = r.Wait(c)
	fmt.Println("purged:", ucp.Final(err), errors.Is(err, uct.ErrEndpointTimeout), a.MatchingSuspended())
	// Output:
	// pending: true false true
	// handler: true
	// purged: true true false
}
