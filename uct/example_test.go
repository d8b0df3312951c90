package uct_test

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/ucgo/ucgo/uct"
)

func ExampleOpError() {
	err := fmt.Errorf("send: %w", uct.NewOpError("shm", "am_short", "pid 1234", uct.ErrPeerFailed, syscall.ESRCH))
	fmt.Println(err)
	fmt.Println(errors.Is(err, uct.ErrPeerFailed), errors.Is(err, syscall.ESRCH))
	var oe *uct.OpError
	if errors.As(err, &oe) {
		fmt.Println(oe.Op, oe.Endpoint, oe.Status.Remedy())
	}
	// Output:
	// send: shm am_short pid 1234: peer process failed: no such process
	// true true
	// am_short pid 1234 endpoint-dead
}

func ExampleStatus_Remedy() {
	for _, s := range []uct.Status{uct.ErrNoResource, uct.ErrInvalidParam, uct.ErrRouteLost, uct.ErrLocalNICFailed} {
		fmt.Printf("%s: %v (endpoint fatal: %v)\n", s, s.Remedy(), s.IsEndpointFatal())
	}
	// Output:
	// no resources available: retry (endpoint fatal: false)
	// invalid parameter: fix-call (endpoint fatal: false)
	// route to peer lost: retry (endpoint fatal: false)
	// local NIC failed: iface-dead (endpoint fatal: true)
}

func ExampleCompletion() {
	c := &uct.Completion{Count: 2, Func: func(c *uct.Completion) { fmt.Println("done:", c.Status) }}
	c.Invoke(uct.ErrCanceled) // first error wins
	c.Invoke(nil)
	// Output: done: request canceled
}

func ExampleEventQueue() {
	q := uct.NewEventQueue()
	qp := "qp 0x12"
	q.Post(&uct.Event{Type: uct.EventQPFatal, Object: qp, Owner: qp, Err: uct.ErrRemoteOperation})

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	ev, err := q.Get(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ev)
	ev.Ack() // every event must be acked
	// Closing the QP waits (bounded) for its events' acks.
	fmt.Println(q.WaitAcks(qp, time.Second))
	q.Close()
	_, err = q.Get(ctx)
	fmt.Println(err)
	// Output:
	// QP fatal on qp 0x12: remote operation error
	// <nil>
	// object closed
}
