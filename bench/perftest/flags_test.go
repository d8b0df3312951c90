package main

import (
	"errors"
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/ucgo/ucgo/bench/perftest/internal/report"
)

func TestParseFlags(t *testing.T) {
	cases := []struct {
		args []string
		want config
	}{
		{[]string{}, config{Out: "failover-out", Transport: "shm", Sizes: []int{8}, Iters: 100000, Warmup: 10000, Window: 16,
			ErrMode: "none", Wait: "poll", Port: 13337, CPU: -1}},
		{[]string{"-l", "-t", "am_lat", "-s", "8,64,1k,2M", "-n", "1000", "-w", "0", "--json"},
			config{Out: "failover-out", Test: "am_lat", Transport: "shm", Sizes: []int{8, 64, 1024, 2 << 20}, Iters: 1000, Warmup: 0, Window: 16,
				ErrMode: "none", Wait: "poll", Port: 13337, CPU: -1, Local: true, Format: report.JSON}},
		// The host may come before or after the flags, as with ucx_perftest.
		{[]string{"-t", "put_bw", "node7", "-x", "rc", "-d", "eth1", "-E", "sleep", "-e", "peer", "-C", "-O", "64", "-p", "999", "--csv"},
			config{Out: "failover-out", Test: "put_bw", Transport: "rc", Sizes: []int{8}, Iters: 100000, Warmup: 10000, Window: 64,
				ErrMode: "peer", Wait: "sleep", Port: 999, CPU: -1, Host: "node7", Wildcard: true, Format: report.CSV, Device: "eth1"}},
		// A server needs no test: the client sends it.
		{[]string{"-p", "0", "-c", "1"}, config{Out: "failover-out", Transport: "shm", Sizes: []int{8}, Iters: 100000, Warmup: 10000, Window: 16,
			ErrMode: "none", Wait: "poll", Port: 0, CPU: 1}},
		// failover: a ucp test with failover on.
		{[]string{"-l", "-t", "tag_lat", "-e", "failover"}, config{Test: "tag_lat", Transport: "shm", Sizes: []int{8}, Iters: 100000,
			Warmup: 10000, Window: 16, ErrMode: "failover", Wait: "poll", Port: 13337, CPU: -1, Local: true, Out: "failover-out"}},
		// A failover run across a fault needs no test.
		{[]string{"-l", "-x", "rc", "-e", "failover", "--fault", "linkdown@2s"}, config{Transport: "rc", Sizes: []int{8}, Iters: 100000,
			Warmup: 10000, Window: 16, ErrMode: "failover", Wait: "poll", Port: 13337, CPU: -1, Local: true, Fault: "linkdown@2s", Out: "failover-out"}},
	}
	for _, c := range cases {
		got, err := parseFlags(c.args, io.Discard)
		if err != nil {
			t.Errorf("%q: %v", c.args, err)
			continue
		}
		if !reflect.DeepEqual(*got, c.want) {
			t.Errorf("%q:\n got %+v\nwant %+v", c.args, *got, c.want)
		}
	}
}

func TestParseFlagsErrors(t *testing.T) {
	cases := []struct {
		args []string
		msg  string
	}{
		{[]string{"-l"}, "which test"},
		{[]string{"-t", "am_lat", "h1", "h2"}, "more than one host"},
		{[]string{"-l", "-t", "am_lat", "host"}, "takes no host"},
		{[]string{"-l", "-t", "nope"}, `unknown test "nope"`},
		{[]string{"-l", "-t", "am_lat", "-x", "ib"}, `unknown transport "ib"`},
		{[]string{"-l", "-t", "am_lat", "-s", "8,x"}, `size "x" is not a number`},
		{[]string{"-l", "-t", "am_lat", "-s", "0"}, "out of range"},
		{[]string{"-l", "-t", "am_lat", "-s", "2000m"}, "out of range"},
		{[]string{"-l", "-t", "am_lat", "-s", ""}, "not a number"},
		{[]string{"-l", "-t", "am_lat", "-n", "0"}, "-n must be at least 1"},
		{[]string{"-l", "-t", "am_lat", "-w", "-1"}, "-w must not be negative"},
		{[]string{"-l", "-t", "am_lat", "-O", "0"}, "-O must be in"},
		{[]string{"-l", "-t", "am_lat", "-e", "sometimes"}, `error mode "sometimes"`},
		{[]string{"-l", "-t", "am_lat", "-E", "spin"}, `wait mode "spin"`},
		{[]string{"-l", "-t", "am_lat", "-p", "70000"}, "no port 70000"},
		{[]string{"-l", "-t", "am_lat", "--csv", "--json"}, "exclude each other"},
		{[]string{"-l", "-t", "am_lat", "-bogus"}, "flag provided but not defined"},
		{[]string{"-l", "-t", "am_lat", "-s", strings.Repeat("8,", 64) + "8"}, "more than 64 sizes"},
	}
	for _, c := range cases {
		_, err := parseFlags(c.args, io.Discard)
		if err == nil || !errors.Is(err, errUsage) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%q: got %v, want a usage error containing %q", c.args, err, c.msg)
		}
	}
	if _, err := parseFlags([]string{"-h"}, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: got %v, want flag.ErrHelp", err)
	}
}

// Known but unbuilt tests and transports say so, and wrap errUnavailable.
func TestCheckRunnable(t *testing.T) {
	cases := []struct {
		args []string
		msg  string
		is   error
	}{
		{[]string{"-l", "-t", "am_lat", "-e", "failover"}, "uct never fails over", errUsage},
		{[]string{"-l", "-t", "put_lat", "-E", "sleep"}, "use -E poll", errUsage},
		{[]string{"-l", "-t", "ucp_put_lat", "-E", "sleep"}, "use -E poll", errUsage},
	}
	for _, c := range cases {
		cfg, err := parseFlags(c.args, io.Discard)
		if err != nil {
			t.Fatalf("%q: %v", c.args, err)
		}
		_, err = checkRunnable(cfg)
		if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%q: got %v, want %v containing %q", c.args, err, c.is, c.msg)
		}
	}
	for _, tc := range tests {
		cfg, err := parseFlags([]string{"-l", "-t", tc.name}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		_, err = checkRunnable(cfg)
		if (tc.run != nil || tc.urun != nil) != (err == nil) {
			t.Errorf("test %s (level %d): checkRunnable = %v", tc.name, tc.level, err)
		}
	}
	for _, a := range [][]string{{"-l", "-t", "am_lat", "-x", "rc"}, {"-l", "-t", "tag_lat"}, {"-l", "-t", "ucp_am_bw", "-e", "peer", "-E", "sleep", "-C"}, {"-l", "-t", "tag_sync_lat", "-x", "rc"}} {
		cfg, err := parseFlags(a, io.Discard)
		if err == nil {
			_, err = checkRunnable(cfg)
		}
		if err != nil {
			t.Errorf("%q: %v", a, err)
		}
	}
}

// FuzzParseFault: a --fault spec parses into a kind, a time and a length
// within bounds, or is refused with an error, never a panic.
func FuzzParseFault(f *testing.F) {
	for _, s := range []string{"linkdown@2s", "blackhole@1.5s+500ms", "flap@0s+10s", "flap@", "@2s", "linkdown@-1s", "linkdown@2s+0s", "x@1s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fs, err := parseFault(s)
		if err != nil {
			return
		}
		if fs.At < 0 || fs.At > foMaxRun || fs.For <= 0 || fs.For > foMaxRun {
			t.Fatalf("%q parsed to %+v", s, fs)
		}
		switch fs.Kind {
		case "linkdown", "blackhole", "flap":
		default:
			t.Fatalf("%q parsed to kind %q", s, fs.Kind)
		}
	})
}
