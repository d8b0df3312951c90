package ucp

import (
	"fmt"
	"time"

	"github.com/ucgo/ucgo/transport/shm"
	"github.com/ucgo/ucgo/uct"
)

// A worker that takes active messages in fragments of at most 64 KiB per
// peer drops a larger one, and says so; the next message arrives.
func ExampleWorker_SetDropHandler() {
	uc, err := NewContext(Config{Transports: []uct.Component{shm.New()}, RndvThresh: ThreshInf, AMReassemblyPeerMax: 64 << 10})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer uc.Close()
	a, _ := uc.NewWorker()
	defer a.Close()
	b, _ := uc.NewWorker()
	defer b.Close()
	delivered, dropped := 0, 0
	b.SetAMHandler(1, func(m *AMMessage) {
		fmt.Println("delivered", m.Length)
		delivered++
	})
	b.SetDropHandler(func(e DropEvent) {
		fmt.Println("dropped:", e.Reason, e.Length)
		dropped++
	})
	ep, err := a.Connect(b.Address(), EPParams{})
	if err != nil {
		fmt.Println(err)
		return
	}
	big := ep.AMSend(1, nil, make([]byte, 1<<20), nil)
	small := ep.AMSend(1, nil, make([]byte, 1000), nil)
	deadline := time.Now().Add(10 * time.Second)
	for (delivered < 1 || dropped < 1 || !big.Done() || !small.Done()) && time.Now().Before(deadline) {
		a.Progress()
		b.Progress()
	}
	// Output:
	// dropped: reassembly limit 1048576
	// delivered 1000
}
