package ucp

import (
	"sync"
	"sync/atomic"

	"github.com/ucgo/ucgo/ucp/internal/match"
	"github.com/ucgo/ucgo/uct"
)

// The rooms of a Worker: its state grouped by concern. Each is embedded in
// Worker and guarded by the worker's lock (mu) unless its comment says
// otherwise.

// epTable is the worker's endpoints.
type epTable struct {
	eps     []*Endpoint // by id (the id peers send); nil when closed; eps[0] unused
	live    []*Endpoint // open endpoints
	byUUID  map[uint64]*Endpoint
	backlog []*Endpoint // endpoints with queued work to send (drainBacklog)
	errq    []*Endpoint // endpoints whose error callback is due
	// goneErr is the status of the receives that only a purged endpoint,
	// or a failed one that was closed, could match (by matcher source,
	// i.e. endpoint id); entries go when the matcher forgets the source
	// (forgetGoneErr). Without SourceTagMask no receive can only match
	// one endpoint and goneErr stays empty.
	goneErr map[match.Src]error

	// backlogSpare is the array drainBacklog hands to backlog next, so
	// that an endpoint that goes back to the backlog at every drain (its
	// lane full) costs no allocation; it never shares backlog's array.
	backlogSpare []*Endpoint
}

// rndvTable names the requests waiting for a rendezvous answer (ATS, RTR,
// ATP) on the wire: a slot id is generation << 32 | index + 1, so a stale
// or forged id finds nothing.
type rndvTable struct {
	slots     []*Request
	slotGen   []uint32
	freeSlots []uint32
}

// amAssembly is the active-message state: handlers, and messages being
// assembled from fragments (reassembly.go).
type amAssembly struct {
	am      map[uint16]AMHandler
	amSeq   uint64       // id of our last multi-fragment active message
	amFrags *match.Queue // active messages being assembled, by (source, id)
	amBufs  [][]byte     // assembly buffers no handler kept
	amMsg   *AMMessage   // given to eager handlers (eagerMsg)
	// placeFree: placements of expected tag messages kept for reuse
	// (tag_frag_place.go)
	placeFree []*tagPlace
}

// transportLock is the locking of a thread-safe worker; the lock order is
// in the package doc ("Lock order"). mu guards the worker's state; tmu is
// the transport lock, held by whoever calls into the ifaces and their
// endpoints, also while sleeping in Wait; progMu lets one Progress run at
// a time.
type transportLock struct {
	safe       bool
	mu         sync.Mutex
	tmu        sync.Mutex
	progMu     sync.Mutex
	inProgress bool
	tstate     uint8 // the transport access of mu's holder (tNone...)
	asleep     bool  // (mu) a Wait sleeps holding tmu
	tWant      int   // (mu) goroutines blocked on tmu that want it soon

	// laneClose holds the uct endpoints of closed lanes until unlock
	// closes them: closing one runs its outstanding completions, whose
	// handlers lock the worker.
	laneClose []uct.Endpoint
}

// asyncErrs is the iface errors reported by transports from their own
// goroutines (onIfaceError), handled by Progress; guarded by amu.
type asyncErrs struct {
	amu    sync.Mutex
	async  []asyncErr
	asyncN atomic.Int32
}

// ifacePoll decides when Progress polls the ifaces that carry no lane.
type ifacePoll struct {
	idleTick uint32      // Progress calls, for polling idle ifaces
	pollIdle atomic.Bool // poll idle ifaces on the next Progress
}

// kaState is the timer of a Peer-mode or failover worker: its goroutine
// sets kaRound (keepalive) or probeDue (failover probes) and kaDue,
// Progress runs what is due.
type kaState struct {
	kaDue    atomic.Bool
	kaRound  atomic.Bool
	probeDue atomic.Bool
	hr       heardRounds // rounds of the lanes' signs of life (heard.go; lock held)
	kaStop   chan struct{}
	kaDone   chan struct{}
}

// slotAlloc stores r in the rendezvous table and returns its id
// (generation << 32 | index + 1).
func (w *rndvTable) slotAlloc(r *Request) uint64 {
	var i uint32
	if n := len(w.freeSlots); n > 0 {
		i = w.freeSlots[n-1]
		w.freeSlots = w.freeSlots[:n-1]
	} else {
		i = uint32(len(w.slots))
		w.slots = append(w.slots, nil)
		w.slotGen = append(w.slotGen, 0)
	}
	w.slotGen[i]++
	w.slots[i] = r
	return uint64(w.slotGen[i])<<32 | uint64(i+1)
}

func (w *rndvTable) slotGet(id uint64) *Request {
	i := uint32(id) - 1
	if uint32(id) == 0 || int(i) >= len(w.slots) || w.slotGen[i] != uint32(id>>32) {
		return nil
	}
	return w.slots[i]
}

func (w *rndvTable) slotFree(id uint64) {
	i := uint32(id) - 1
	if uint32(id) == 0 || int(i) >= len(w.slots) || w.slotGen[i] != uint32(id>>32) || w.slots[i] == nil {
		return
	}
	w.slots[i] = nil
	w.freeSlots = append(w.freeSlots, i)
}
