package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ucgo/ucgo/transport/rc"
	"github.com/ucgo/ucgo/transport/shm"
	"github.com/ucgo/ucgo/ucp"
	"github.com/ucgo/ucgo/uct"
)

// Active message ids and tags between the measuring side and its peers.
const (
	amHello = 1 // measuring side -> peer: a new endpoint
	amAck   = 2 // peer -> measuring side: its answer

	tagPing = 0x7363616c65 // "scale"
	tagPong = tagPing + 1
)

// spinFor is how long a peer keeps polling after its last work before it
// sleeps in Worker.Wait: long enough to stay awake between the pings of a
// ping-pong (also on a loaded machine), short enough that hundreds of idle
// peers leave the CPUs to the measuring side.
const spinFor = 5 * time.Millisecond

// transports returns the one transport of -x.
func transports(x string) ([]uct.Component, error) {
	switch x {
	case "shm":
		return []uct.Component{shm.New()}, nil
	case "rc":
		return []uct.Component{rc.New(rc.Config{Device: "lo", Port: -1})}, nil
	}
	return nil, fmt.Errorf("%w: -x %q: want shm or rc", errUsage, x)
}

// peer is one worker of a child process. Its handlers run on the
// goroutine that serves it.
type peer struct {
	w     *ucp.Worker
	reply *ucp.Endpoint // the measuring side, learned from its hello
	buf   [8]byte
	recv  ucp.Params
	rel   ucp.Params
}

func newPeer(c *ucp.Context) (*peer, error) {
	w, err := c.NewWorker()
	if err != nil {
		return nil, err
	}
	p := &peer{w: w}
	p.rel.Callback = func(r *ucp.Request) { r.Release() }
	p.recv.Callback = p.pinged
	w.SetAMHandler(amHello, p.hello)
	return p, nil
}

func (p *peer) hello(m *ucp.AMMessage) {
	if p.reply == nil {
		p.reply = m.Reply
		p.w.TagRecv(p.buf[:], tagPing, ^uint64(0), &p.recv)
	}
	m.Reply.AMSend(amAck, nil, nil, &p.rel)
}

// pinged answers a ping with a pong and posts the next receive.
func (p *peer) pinged(r *ucp.Request) {
	err := r.Err()
	r.Release()
	if err != nil {
		return
	}
	p.reply.TagSend(p.buf[:], tagPong, &p.rel)
	p.w.TagRecv(p.buf[:], tagPing, ^uint64(0), &p.recv)
}

// serve progresses the worker until ctx ends: busy while there is work,
// asleep in Wait once spinFor has passed without any. The clock is read
// only every 256 empty polls, never on the path of a message.
func (p *peer) serve(ctx context.Context) {
	idleSince := time.Now()
	worked := false
	for i := 0; ctx.Err() == nil; i++ {
		if p.w.Progress() > 0 {
			worked = true
			continue
		}
		if i%256 != 255 {
			continue
		}
		switch {
		case worked:
			idleSince, worked = time.Now(), false
		case time.Since(idleSince) > spinFor:
			p.w.Wait(ctx)
			idleSince = time.Now()
		}
	}
}

// child is the -child mode: open n peer workers, print their addresses
// ("addr HEX" lines, then "ready"), serve them until standard input
// closes.
func child(x string, n int, stdin io.Reader, stdout io.Writer) error {
	comps, err := transports(x)
	if err != nil {
		return err
	}
	c, err := ucp.NewContext(ucp.Config{Transports: comps})
	if err != nil {
		return err
	}
	defer c.Close()
	peers := make([]*peer, 0, n)
	defer func() {
		for _, p := range peers {
			p.w.Close()
		}
	}()
	var b strings.Builder
	for i := 0; i < n; i++ {
		p, err := newPeer(c)
		if err != nil {
			return fmt.Errorf("worker %d: %w", i, err)
		}
		peers = append(peers, p)
		fmt.Fprintf(&b, "addr %x\n", p.w.Address())
	}
	b.WriteString("ready\n")
	if _, err := io.WriteString(stdout, b.String()); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, len(peers))
	for _, p := range peers {
		go func() {
			p.serve(ctx)
			done <- struct{}{}
		}()
	}
	io.Copy(io.Discard, stdin) // the measuring side closes it when done
	cancel()
	for range peers {
		<-done
	}
	return nil
}

// childMain runs child mode as the process's whole job.
func childMain(x string, n int) int {
	if err := child(x, n, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "scale child:", err)
		return 1
	}
	return 0
}
