package bootstrap

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/ucgo/ucgo/ucp"
)

// Tag layout of a World: the sender's rank in the top RankBits bits, the
// program's own bits below.
const (
	RankBits  = 24
	RankShift = 64 - RankBits
	// RankMask covers the rank bits; it is the worker's
	// Config.SourceTagMask.
	RankMask = uint64(1<<RankBits-1) << RankShift
	// AnyRank is the receive mask that matches every bit but the rank's:
	// a wildcard-source receive of one tag.
	AnyRank = ^RankMask
	// Exact is the receive mask that names the sender and every bit.
	Exact = ^uint64(0)
	// MaxRanks is the largest job a World tags.
	MaxRanks = 1 << RankBits
)

// Tag returns the tag that rank sends with for the program's tag t (only
// t's low RankShift bits are kept).
func Tag(rank int, t uint64) uint64 { return uint64(rank)<<RankShift | t&^RankMask }

// TagRank returns the rank a tag of a World was sent by.
func TagRank(tag uint64) int { return int(tag >> RankShift) }

// WorldOptions configure NewWorld.
type WorldOptions struct {
	// Config configures the ucp context; its SourceTagMask is set to
	// RankMask. Its fields left at their zero value take the values of
	// the environment variables (UCGO_TLS, UCGO_ERR_MODE, ...) as in
	// ucp.NewContext.
	Config ucp.Config
	// Eager connects the endpoints to every rank (itself included) in
	// NewWorld; otherwise EP connects each on first use. A program that
	// must tell which receives a failed rank can match connects eagerly,
	// so every rank's endpoint, with its source tag, exists before any
	// failure.
	Eager bool
	// ErrorHandler, if set, is called (ucp's peer error mode, from
	// Progress) when the endpoint to a rank fails.
	ErrorHandler func(rank int, ep *ucp.Endpoint, err error)
	// Timeout is the endpoints' EPParams.Timeout: it bounds each lane's
	// connection and the liveness of its operations; 0 uses the
	// transports' defaults.
	Timeout time.Duration
	// KeyPrefix names this world's keys in the key-value space
	// (default "ucgo"), so that several worlds can share a job.
	KeyPrefix string
}

// World is a job's ranks connected by ucp: a context and worker of this
// rank, endpoints to the others and the process manager that started
// them. Its methods, as the worker's, are for one goroutine unless
// Config.ThreadSafe is set (EP then still needs one caller at a time).
type World struct {
	PM      Client
	Context *ucp.Context
	Worker  *ucp.Worker

	opts  WorldOptions
	addrs [][]byte
	eps   []*ucp.Endpoint
}

// ErrWorld is wrapped by errors about a world's size, ranks and
// published addresses.
var ErrWorld = errors.New("bootstrap: world")

// Start connects to the launcher (FromEnv) and makes a World over it.
func Start(opts WorldOptions) (*World, error) {
	pm, err := FromEnv()
	if err != nil {
		return nil, err
	}
	w, err := NewWorld(pm, opts)
	if err != nil {
		pm.Close()
		return nil, err
	}
	return w, nil
}

// NewWorld opens a context and a worker, publishes the worker's address
// through pm, waits at a barrier for every rank to do the same and, with
// opts.Eager, connects to every rank. On error it closes what it opened
// but not pm.
func NewWorld(pm Client, opts WorldOptions) (*World, error) {
	if pm.Size() > MaxRanks {
		return nil, fmt.Errorf("%w: %d ranks exceed the %d a tag can name", ErrWorld, pm.Size(), MaxRanks)
	}
	if opts.KeyPrefix == "" {
		opts.KeyPrefix = "ucgo"
	}
	opts.Config.SourceTagMask = RankMask
	uc, err := ucp.NewContext(opts.Config)
	if err != nil {
		return nil, err
	}
	wk, err := uc.NewWorker()
	if err != nil {
		uc.Close()
		return nil, err
	}
	w := &World{PM: pm, Context: uc, Worker: wk, opts: opts,
		addrs: make([][]byte, pm.Size()), eps: make([]*ucp.Endpoint, pm.Size())}
	fail := func(err error) (*World, error) {
		return nil, errors.Join(err, wk.Close(), uc.Close())
	}
	if err := w.publish(); err != nil {
		return fail(err)
	}
	if err := pm.Barrier(); err != nil {
		return fail(err)
	}
	if opts.Eager {
		for r := range w.eps {
			if _, err := w.EP(r); err != nil {
				return fail(err)
			}
		}
	}
	return w, nil
}

// publish puts the worker's address in hex, in chunks of the process
// manager's value limit: KeyPrefix-addr-R holds the number of chunks,
// KeyPrefix-addr-R-I chunk I.
func (w *World) publish() error {
	v := hex.EncodeToString(w.Worker.Address())
	n := max(w.PM.MaxValue(), 16)
	var chunks []string
	for len(v) > n {
		chunks, v = append(chunks, v[:n]), v[n:]
	}
	chunks = append(chunks, v)
	me := w.PM.Rank()
	for i, c := range chunks {
		if err := w.PM.Put(w.key(me, i), c); err != nil {
			return err
		}
	}
	return w.PM.Put(w.key(me, -1), strconv.Itoa(len(chunks)))
}

func (w *World) key(rank, chunk int) string {
	if chunk < 0 {
		return fmt.Sprintf("%s-addr-%d", w.opts.KeyPrefix, rank)
	}
	return fmt.Sprintf("%s-addr-%d-%d", w.opts.KeyPrefix, rank, chunk)
}

// Address returns rank's worker address as it published it.
func (w *World) Address(rank int) ([]byte, error) {
	if rank < 0 || rank >= len(w.addrs) {
		return nil, fmt.Errorf("%w: rank %d of %d", ErrWorld, rank, len(w.addrs))
	}
	if w.addrs[rank] != nil {
		return w.addrs[rank], nil
	}
	v, err := w.PM.Get(w.key(rank, -1))
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 1024 {
		return nil, fmt.Errorf("%w: rank %d's address has %q chunks", ErrWorld, rank, v)
	}
	var s string
	for i := 0; i < n; i++ {
		c, err := w.PM.Get(w.key(rank, i))
		if err != nil {
			return nil, err
		}
		s += c
	}
	a, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%w: rank %d's address is not hex: %w", ErrWorld, rank, err)
	}
	w.addrs[rank] = a
	return a, nil
}

// Rank is this process's rank.
func (w *World) Rank() int { return w.PM.Rank() }

// Size is the number of ranks.
func (w *World) Size() int { return w.PM.Size() }

// EP returns the endpoint to rank, connecting it on first use with
// EPParams.SourceTag = Tag(rank, 0), so that the worker knows which
// receives (tag mask covering RankMask) only that rank can match.
func (w *World) EP(rank int) (*ucp.Endpoint, error) {
	if rank >= 0 && rank < len(w.eps) && w.eps[rank] != nil {
		return w.eps[rank], nil
	}
	a, err := w.Address(rank)
	if err != nil {
		return nil, err
	}
	p := ucp.EPParams{SourceTag: Tag(rank, 0), Timeout: w.opts.Timeout}
	if h := w.opts.ErrorHandler; h != nil {
		p.ErrorHandler = func(ep *ucp.Endpoint, err error) { h(rank, ep, err) }
	}
	ep, err := w.Worker.Connect(a, p)
	if err != nil {
		return nil, fmt.Errorf("connect to rank %d: %w", rank, err)
	}
	w.eps[rank] = ep
	return ep, nil
}

// Forget drops the World's endpoint to rank (after the program purged or
// closed it), so that the next EP connects anew.
func (w *World) Forget(rank int) {
	if rank >= 0 && rank < len(w.eps) {
		w.eps[rank] = nil
	}
}

// Barrier waits for every rank at the process manager. It cannot finish
// once a rank died: fault-tolerant programs agree among the survivors
// over ucp instead.
func (w *World) Barrier() error { return w.PM.Barrier() }

// Close closes the worker and the context, and finalizes the connection
// to the process manager.
func (w *World) Close() error {
	return errors.Join(w.Worker.Close(), w.Context.Close(), w.PM.Finalize())
}
