package main

import (
	"errors"
	"fmt"
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
	// open is nil while the transport's package is missing; missing then
	// says so.
	open    func() (uct.Component, error)
	missing string
	// local prepares where the two processes of -l run; nil: both on
	// loopback in this network namespace.
	local func() (localPlan, error)
}

// localPlan says how -l starts the server and how the client reaches it.
// The rc transport is meant to run its two sides in two network namespaces
// (created when root, else loopback): it will return a plan with a command
// prefix that enters the server's namespace.
type localPlan struct {
	ServerPrefix []string // command prefix for the server process, e.g. "ip netns exec NS"
	ListenHost   string   // address the server listens on and the client dials
	Cleanup      func() error
}

var transports = []transportDef{
	{name: "shm", open: func() (uct.Component, error) { return shm.New(), nil }},
	{name: "rc", missing: "transport rc is not available yet (package transport/rc is not on main)"},
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

// testDef is one row of the test table. run is called on both sides with
// the same arguments; run is nil for tests whose layer is missing.
type testDef struct {
	name  string
	level level
	kind  testKind
	desc  string
	need  uct.Cap
	// fixedSize, when set, replaces -s (atomics work on 8-byte words).
	fixedSize int
	minSize   int
	run       func(s *session, size, iters int, measure bool) error
	// rmaPoll: the test polls memory written by the peer, which raises no
	// event, so it cannot sleep (-E sleep).
	rmaPoll bool
}

var errNeedUCP = fmt.Errorf("ucp tests need package ucp, which is not on main yet: %w", errUnavailable)

var tests = []testDef{
	{name: "am_lat", kind: pingPong, desc: "active message latency (ping-pong)", need: uct.CapAMShort | uct.CapAMBcopy, minSize: 8, run: amLat},
	{name: "am_bw", kind: stream, desc: "active message bandwidth / message rate", need: uct.CapAMShort | uct.CapAMBcopy, minSize: 8, run: amBW},
	{name: "put_lat", kind: pingPong, desc: "put latency (ping-pong, polling the last byte)", need: uct.CapPutShort | uct.CapPutZcopy, run: putLat, rmaPoll: true},
	{name: "put_bw", kind: stream, desc: "put bandwidth / message rate", need: uct.CapPutShort | uct.CapPutZcopy, run: putBW},
	{name: "get_bw", kind: stream, desc: "get bandwidth / message rate", need: uct.CapGetZcopy, run: getBW},
	{name: "add_lat", kind: pingPong, desc: "atomic add latency (ping-pong on a counter)", need: uct.CapAtomic64, fixedSize: 8, run: addLat, rmaPoll: true},
	{name: "fadd", kind: oneSided, desc: "atomic fetch-and-add latency / rate", need: uct.CapAtomic64, fixedSize: 8, run: fetchAdd},
	{name: "cswap", kind: oneSided, desc: "atomic compare-and-swap latency / rate", need: uct.CapAtomic64, fixedSize: 8, run: cswap},

	{name: "tag_lat", level: levelUCP, kind: pingPong, desc: "tag-matched send/receive latency"},
	{name: "tag_bw", level: levelUCP, kind: stream, desc: "tag-matched send/receive bandwidth"},
	{name: "tag_sync_lat", level: levelUCP, kind: pingPong, desc: "synchronous tag send latency"},
	{name: "ucp_put_lat", level: levelUCP, kind: pingPong, desc: "ucp put latency"},
	{name: "ucp_put_bw", level: levelUCP, kind: stream, desc: "ucp put bandwidth"},
	{name: "ucp_get", level: levelUCP, kind: stream, desc: "ucp get latency / bandwidth"},
	{name: "ucp_am_lat", level: levelUCP, kind: pingPong, desc: "ucp active message latency"},
	{name: "ucp_am_bw", level: levelUCP, kind: stream, desc: "ucp active message bandwidth"},
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
	if t.run == nil {
		if t.level == levelUCP {
			return fmt.Errorf("test %s: %w", t.name, errNeedUCP)
		}
		return fmt.Errorf("test %s: %w", t.name, errUnavailable)
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
		if err := t.available(); err != nil {
			note = " [needs package ucp]"
		}
		fmt.Fprintf(&b, "  %-13s %s%s\n", t.name, t.desc, note)
	}
	b.WriteString("transports:\n")
	for _, t := range transports {
		note := ""
		if t.open == nil {
			note = " [not available yet]"
		}
		fmt.Fprintf(&b, "  %s%s\n", t.name, note)
	}
	return b.String()
}
