package main

import (
	"fmt"
	"strings"
)

// testMap says how one of our perftest tests is run by ucx_perftest.
type testMap struct {
	name string // ours (bench/perftest -t)
	ucx  string // ucx_perftest -t
	uct  bool   // a uct test: ucx_perftest takes -x/-d and -D layouts
	lat  bool   // a latency (ping-pong) test: plotted and compared by latency
	// layouts are tried in turn for uct tests until ucx_perftest accepts
	// one for the size (short up to the transport's limit, then bcopy or
	// zcopy); ours picks short/bcopy/zcopy by size itself.
	layouts []string
	fixed   int // atomics: the only size
}

var amLayouts = []string{"short", "bcopy", "zcopy"}

var testMaps = []testMap{
	{name: "am_lat", ucx: "am_lat", uct: true, lat: true, layouts: amLayouts},
	{name: "am_bw", ucx: "am_bw", uct: true, layouts: amLayouts},
	{name: "put_lat", ucx: "put_lat", uct: true, lat: true, layouts: amLayouts},
	{name: "put_bw", ucx: "put_bw", uct: true, layouts: amLayouts},
	{name: "get_bw", ucx: "get", uct: true, layouts: []string{"bcopy", "zcopy"}},
	{name: "add_lat", ucx: "add_lat", uct: true, lat: true, layouts: []string{"short"}, fixed: 8},
	{name: "fadd", ucx: "fadd", uct: true, lat: true, layouts: []string{"short"}, fixed: 8},
	{name: "cswap", ucx: "cswap", uct: true, lat: true, layouts: []string{"short"}, fixed: 8},
	{name: "tag_lat", ucx: "tag_lat", lat: true},
	{name: "tag_bw", ucx: "tag_bw"},
	{name: "tag_sync_lat", ucx: "tag_sync_lat", lat: true},
	{name: "ucp_put_lat", ucx: "ucp_put_lat", lat: true},
	{name: "ucp_put_bw", ucx: "ucp_put_bw"},
	{name: "ucp_get", ucx: "ucp_get"},
	{name: "ucp_am_lat", ucx: "ucp_am_lat", lat: true},
	{name: "ucp_am_bw", ucx: "ucp_am_bw"},
}

func findTestMap(name string) *testMap {
	for i := range testMaps {
		if testMaps[i].name == name {
			return &testMaps[i]
		}
	}
	return nil
}

func testMapNames() string {
	var n []string
	for _, t := range testMaps {
		n = append(n, t.name)
	}
	return strings.Join(n, ", ")
}

// transportMap says what UCX runs against one of our transports.
type transportMap struct {
	name string // the name of the row in compare's -x and tables
	// ours is perftest's -x ("" : name), oursEnv perftest's environment.
	ours    string
	oursEnv []string
	// uctArgs select the uct transport and device of ucx_perftest.
	uctArgs []string
	// ucpEnv selects UCX's transports for ucp tests.
	ucpEnv []string
	desc   string // what UCX runs, for the report
}

var transportMaps = []transportMap{
	{name: "shm", uctArgs: []string{"-x", "posix", "-d", "memory"}, ucpEnv: []string{"UCX_TLS=shm"},
		desc: "UCX posix (uct) / UCX_TLS=shm (ucp)"},
	// Ours runs rc between two network namespaces (perftest -l as root);
	// UCX has no RDMA device here, so it runs tcp over loopback.
	{name: "rc", uctArgs: []string{"-x", "tcp", "-d", "lo"}, ucpEnv: []string{"UCX_TLS=tcp", "UCX_NET_DEVICES=lo"},
		desc: "UCX tcp over lo (uct) / UCX_TLS=tcp, UCX_NET_DEVICES=lo (ucp)"},
	// rc-lo runs ours over lo too, so that both tools cross the same link.
	{name: "rc-lo", ours: "rc", oursEnv: []string{"UCGO_PERFTEST_NO_NETNS=1"},
		uctArgs: []string{"-x", "tcp", "-d", "lo"}, ucpEnv: []string{"UCX_TLS=tcp", "UCX_NET_DEVICES=lo"},
		desc: "ucgo rc over lo; UCX tcp over lo (uct) / UCX_TLS=tcp, UCX_NET_DEVICES=lo (ucp)"},
}

// oursName is perftest's name of the transport.
func (tr *transportMap) oursName() string {
	if tr.ours != "" {
		return tr.ours
	}
	return tr.name
}

func findTransportMap(name string) *transportMap {
	for i := range transportMaps {
		if transportMaps[i].name == name {
			return &transportMaps[i]
		}
	}
	return nil
}

// ucxArgs are the ucx_perftest arguments of a test on transport tr, both
// sides (the client adds the host, the test and the sizes), and the
// environment of both.
func (t *testMap) ucxSideArgs(tr *transportMap) (args, env []string) {
	if t.uct {
		return tr.uctArgs, nil
	}
	return nil, tr.ucpEnv
}

func (t *testMap) String() string { return fmt.Sprintf("%s (ucx_perftest -t %s)", t.name, t.ucx) }
