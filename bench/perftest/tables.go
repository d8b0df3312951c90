package main

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/ucgo/ucgo/transport/shm"
	"github.com/ucgo/ucgo/uct"
)

// errUnavailable marks a test or transport that is known but cannot run
// in this build (its package is not written yet).
var errUnavailable = errors.New("not available")

// transportDef is one row of the transport table. To add a transport, add
// a row: open returns its component; local places the two processes of -l.
type transportDef struct {
	name string
	desc string
	// open returns the component for cfg (-d names its device). It is nil
	// while the transport's package is missing; missing then says so.
	open    func(cfg *config) (uct.Component, error)
	missing string
	// local prepares where the two processes of -l run; nil: both on
	// loopback in this network namespace.
	local func(cfg *config) (localPlan, error)
}

// localPlan says how -l starts the server and where the client runs.
type localPlan struct {
	// Server makes the server process's command (nil: exec.Command).
	Server func(name string, args ...string) *exec.Cmd
	// Client runs the client side (nil: in this process as it is).
	Client func(fn func() error) error
	// ListenHost is the address the server listens on and the client
	// dials.
	ListenHost string
	// Device is the -d of both sides when the user gave none.
	Device string
	// Where names the placement in the table title ("" for none).
	Where string
	// Note, when set, is printed on stderr (e.g. why a fallback was used).
	Note    string
	Cleanup func() error
}

var transports = []transportDef{
	{name: "shm", desc: "shared memory between processes of one host",
		open: func(*config) (uct.Component, error) { return shm.New(), nil }},
	{name: "rc", desc: "RDMA reliable connection over the user-space RoCEv2 provider (-d netdev)",
		open: openRC, local: localRC},
}

func findTransport(name string) *transportDef {
	for i := range transports {
		if transports[i].name == name {
			return &transports[i]
		}
	}
	return nil
}

func transportNames() []string {
	var n []string
	for _, t := range transports {
		n = append(n, t.name)
	}
	return n
}

// level is the layer a test exercises.
type level int

const (
	levelUCT level = iota
	levelUCP
)

// testKind says how a test's iterations are timed.
type testKind int

const (
	pingPong testKind = iota // one iteration is a round trip; latency is halved
	oneSided                 // initiator only, one operation outstanding
	stream                   // initiator only, a window of outstanding operations
)

// testDef is one row of the test table. run (uct) or urun (ucp) is called
// on both sides with the same arguments; both are nil for tests that
// cannot run in this build, and missing says why.
type testDef struct {
	name  string
	level level
	kind  testKind
	desc  string
	need  uct.Cap
	// fixedSize, when set, replaces -s (atomics work on 8-byte words).
	fixedSize int
	minSize   int
	run       func(s *session, size, iters int) error
	urun      func(s *ucpSession, size, iters int) error
	missing   string
	// rmaPoll: the test polls memory written by the peer, which raises no
	// event, so it cannot sleep (-E sleep).
	rmaPoll bool
}

var tests = []testDef{
	{name: "am_lat", kind: pingPong, desc: "active message latency (ping-pong)", need: uct.CapAMShort | uct.CapAMBcopy, minSize: 8, run: amLat},
	{name: "am_bw", kind: stream, desc: "active message bandwidth / message rate", need: uct.CapAMShort | uct.CapAMBcopy, minSize: 8, run: amBW},
	{name: "put_lat", kind: pingPong, desc: "put latency (ping-pong, polling the last byte)", need: uct.CapPutShort | uct.CapPutZcopy, run: putLat, rmaPoll: true},
	{name: "put_bw", kind: stream, desc: "put bandwidth / message rate", need: uct.CapPutShort | uct.CapPutZcopy, run: putBW},
	{name: "get_bw", kind: stream, desc: "get bandwidth / message rate", need: uct.CapGetZcopy, run: getBW},
	{name: "add_lat", kind: pingPong, desc: "atomic add latency (ping-pong on a counter)", need: uct.CapAtomic64, fixedSize: 8, run: addLat, rmaPoll: true},
	{name: "fadd", kind: oneSided, desc: "atomic fetch-and-add latency / rate", need: uct.CapAtomic64, fixedSize: 8, run: fetchAdd},
	{name: "cswap", kind: oneSided, desc: "atomic compare-and-swap latency / rate", need: uct.CapAtomic64, fixedSize: 8, run: cswap},

	{name: "tag_lat", level: levelUCP, kind: pingPong, desc: "tag send/receive latency (ping-pong)", urun: tagLat},
	{name: "tag_bw", level: levelUCP, kind: stream, desc: "tag send/receive bandwidth / message rate", urun: tagBW},
	{name: "tag_sync_lat", level: levelUCP, kind: pingPong, desc: "synchronous tag send latency (ping-pong)", urun: tagSyncLat},
	{name: "ucp_put_lat", level: levelUCP, kind: pingPong, desc: "ucp put latency (ping-pong, polling the last byte)", urun: ucpPutLat, rmaPoll: true},
	{name: "ucp_put_bw", level: levelUCP, kind: stream, desc: "ucp put bandwidth / message rate", urun: ucpPutBW},
	{name: "ucp_get", level: levelUCP, kind: stream, desc: "ucp get bandwidth / message rate", urun: ucpGet},
	{name: "ucp_am_lat", level: levelUCP, kind: pingPong, desc: "ucp active message latency (ping-pong)", urun: ucpAMLat},
	{name: "ucp_am_bw", level: levelUCP, kind: stream, desc: "ucp active message bandwidth / message rate", urun: ucpAMBW},
	{name: "ucp_add", level: levelUCP, kind: stream, desc: "ucp atomic add bandwidth / message rate", fixedSize: 8, urun: ucpAdd},
	{name: "ucp_fadd", level: levelUCP, kind: oneSided, desc: "ucp atomic fetch-and-add latency / rate", fixedSize: 8, urun: ucpFAdd},
	{name: "ucp_cswap", level: levelUCP, kind: oneSided, desc: "ucp atomic compare-and-swap latency / rate", fixedSize: 8, urun: ucpCSwap},
}

func findTest(name string) *testDef {
	for i := range tests {
		if tests[i].name == name {
			return &tests[i]
		}
	}
	return nil
}

// available says whether t can run in this build.
func (t *testDef) available() error {
	if t.run == nil && t.urun == nil {
		return fmt.Errorf("test %s: %s: %w", t.name, t.missing, errUnavailable)
	}
	return nil
}

func (t *transportDef) available() error {
	if t.open == nil {
		return fmt.Errorf("%s: %w", t.missing, errUnavailable)
	}
	return nil
}

// sizes returns the message sizes a test runs.
func (t *testDef) sizes(requested []int) []int {
	if t.fixedSize > 0 {
		return []int{t.fixedSize}
	}
	return requested
}

func testList() string {
	var b strings.Builder
	b.WriteString("tests:\n")
	for _, t := range tests {
		note := ""
		if t.run == nil && t.urun == nil {
			note = " [" + t.missing + "]"
		}
		fmt.Fprintf(&b, "  %-13s %s%s\n", t.name, t.desc, note)
	}
	b.WriteString("transports:\n")
	for _, t := range transports {
		note := ""
		if t.open == nil {
			note = " [" + t.missing + "]"
		}
		fmt.Fprintf(&b, "  %-13s %s%s\n", t.name, t.desc, note)
	}
	return b.String()
}
