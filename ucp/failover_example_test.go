package ucp_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ucgo/ucgo/failover"
	"github.com/ucgo/ucgo/transport/shm"
	"github.com/ucgo/ucgo/ucp"
	"github.com/ucgo/ucgo/uct"
)

// With failover on, an endpoint's messages travel sequenced: numbered,
// kept until acknowledged, delivered once and in order, and moved to
// another lane when theirs breaks. The handler hears of every move; a
// flush completes once the peer has acknowledged what went before it.
func ExampleWorker_SetFailoverHandler() {
	cfg := ucp.Config{Transports: []uct.Component{shm.New()}, Failover: failover.Policy{Mode: failover.SameTransport}}
	var ws [2]*ucp.Worker
	for i := range ws {
		uc, err := ucp.NewContext(cfg)
		if err != nil {
			fmt.Println(err)
			return
		}
		defer uc.Close()
		if ws[i], err = uc.NewWorker(); err != nil {
			fmt.Println(err)
			return
		}
		defer ws[i].Close()
		ws[i].SetFailoverHandler(func(e failover.Event) { fmt.Println(e) })
	}
	ep, err := ws[0].Connect(ws[1].Address(), ucp.EPParams{})
	if err != nil {
		fmt.Println(err)
		return
	}
	in := make([]byte, 5)
	r := ws[1].TagRecv(in, 1, ^uint64(0), nil)
	s := ep.TagSend([]byte("hello"), 1, nil)
	f := ep.Flush(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for !r.Done() || !f.Done() {
		ws[0].Progress()
		ws[1].Progress()
		if ctx.Err() != nil {
			fmt.Println("timed out")
			return
		}
	}
	fmt.Println(string(in), s.Err(), f.Err(), ws[0].Stats().FailedOver)
	// Output: hello <nil> <nil> 0
}
