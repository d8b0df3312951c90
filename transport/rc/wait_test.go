package rc

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ucgo/ucgo/uct"
)

// TestSleepersNotWokenByOthersTraffic: the ifaces of one device (the
// workers of a process) that sleep in Wait do not wake for the packets of
// another iface of the device that polls, and a packet for a sleeper
// still reaches it. Each sleeper used to poll the device's socket itself,
// so every packet the device received woke all of them, and they all ran
// the engine against the polling one.
func TestSleepersNotWokenByOthersTraffic(t *testing.T) {
	const sleepers, rounds = 4, 500
	var md *MD
	for i := 0; md == nil; i++ {
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		port := c.LocalAddr().(*net.UDPAddr).Port
		c.Close()
		// The default progress interval: the device has its background
		// goroutine.
		mdi, err := New(Config{Device: "lo", Addr: loopback, Port: port}).OpenMD(uct.MDParams{})
		if err != nil && i == 10 {
			t.Fatal(err)
		}
		if err == nil {
			md = mdi.(*MD)
		}
	}
	defer md.Close()
	if !md.dev.Sleep() {
		t.Fatal("the device has no background goroutine")
	}
	active := openLoopIface(t, md)
	defer active.Close()
	peerMD := openLoopMD(t)
	defer peerMD.Close()
	peer := openLoopIface(t, peerMD)
	defer peer.Close()

	// The peer echoes; the active iface counts the echoes.
	echoes := 0
	active.SetAMHandler(1, func(any, []byte, uct.AMFlags) { echoes++ }, nil)
	var back uct.Endpoint
	peer.SetAMHandler(1, func(any, []byte, uct.AMFlags) {
		if err := back.AMShort(1, 0, nil); err != nil {
			t.Errorf("echo: %v", err)
		}
	}, nil)
	ep, err := active.Connect(peer.Address(), uct.EPParams{})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	if back, err = peer.Connect(active.Address(), uct.EPParams{}); err != nil {
		t.Fatal(err)
	}
	defer back.Close()

	// The sleepers: arm, sleep in Wait, count the wake-ups, progress.
	ctx, cancel := context.WithCancel(context.Background())
	var wakes atomic.Int64
	var got [sleepers]atomic.Int64
	sl := make([]*Iface, sleepers)
	var wg sync.WaitGroup
	for i := range sl {
		sl[i] = openLoopIface(t, md)
		defer sl[i].Close()
		sl[i].SetAMHandler(2, func(any, []byte, uct.AMFlags) { got[i].Add(1) }, nil)
		wg.Add(1)
		go func(it *Iface) {
			defer wg.Done()
			for ctx.Err() == nil {
				if it.Arm() == nil {
					_ = it.Wait(ctx)
					if ctx.Err() == nil {
						wakes.Add(1)
					}
				}
				it.Progress()
			}
		}(sl[i])
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			wg.Wait()
		}
	}
	defer stop()

	deadline := time.Now().Add(30 * time.Second)
	progress := func() {
		active.Progress()
		peer.Progress()
		if time.Now().After(deadline) {
			t.Fatalf("timed out: %d echoes", echoes)
		}
	}
	for i := 0; i < rounds; i++ {
		for ep.AMShort(1, 0, nil) == uct.ErrNoResource {
			progress()
		}
		for echoes <= i {
			progress()
		}
	}
	w := wakes.Load()
	t.Logf("%d sleepers woke %d times in %d ping-pongs of another iface", sleepers, w, rounds)
	if w > rounds/10 {
		t.Errorf("%d sleepers woke %d times in %d ping-pongs of another iface of their device; want them asleep", sleepers, w, rounds)
	}

	// A message for a sleeper reaches it while it sleeps.
	for i, it := range sl {
		e, err := peer.Connect(it.Address(), uct.EPParams{})
		if err != nil {
			t.Fatal(err)
		}
		for e.AMShort(2, 0, nil) == uct.ErrNoResource {
			peer.Progress()
		}
		for got[i].Load() == 0 {
			peer.Progress()
			active.Progress()
			if time.Now().After(deadline) {
				t.Fatalf("sleeper %d did not get its message", i)
			}
			time.Sleep(100 * time.Microsecond)
		}
		e.Close()
	}
	stop()
}
