package main

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func info(t *testing.T, args ...string) string {
	t.Helper()
	var b strings.Builder
	if err := run(append([]string{"info"}, args...), &b); err != nil {
		t.Fatalf("ucgo info %v: %v", args, err)
	}
	return b.String()
}

// -d lists shm's one device and rc on loopback with capabilities, limits
// and link state, and rc's UDP port with its reuseport slot.
func TestInfoDevices(t *testing.T) {
	out := info(t, "-d")
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^# Transport: shm\n(.*\n)*?#   Device: memory \(shm\)\n(#      .*\n)*?#      capabilities: .*\bam_short\b.*\bshared_memory\n`),
		regexp.MustCompile(`(?m)^#      put: short \d+ [KMG]?i?B, bcopy \d+ [KMG]?i?B, zcopy \d+ [KMG]?i?B$`),
		regexp.MustCompile(`(?m)^#      link: none \(memory\)$`),
		regexp.MustCompile(`(?m)^# Transport: rc`),
		regexp.MustCompile(`(?m)^#   Device: lo \(net\)\n(#      .*\n)*?#      link: PORT_ACTIVE, MTU \d+ \(netdev \d+\), GID ::ffff:127\.0\.0\.1\n#      udp: 127\.0\.0\.1:\d+, .*(reuseport slot 0x[0-9a-f]{2} \(QPNs 0x[0-9a-f]{6}-0x[0-9a-f]{6}\))$`),
		regexp.MustCompile(`(?m)^#      atomics: 32-bit, 64-bit`),
	} {
		if !want.MatchString(out) {
			t.Errorf("output lacks %v:\n%s", want, out)
		}
	}
}

// -c prints every variable with its effective value and source, flags
// an unknown UCGO_ variable, and refuses a bad value naming it.
func TestInfoConfig(t *testing.T) {
	t.Setenv("UCGO_ERR_MODE", "peer")
	t.Setenv("UCGO_RNDV_THRESH", "16k")
	t.Setenv("UCGO_TSL", "rc")
	t.Setenv("UCGO_PMI", "")
	t.Setenv("UCGO_STRIPE_ALWAYS", "1")
	out := info(t, "-c")
	for _, want := range []string{
		"UCGO_ERR_MODE            peer ", "environment (UCGO_ERR_MODE=peer)",
		"UCGO_RNDV_THRESH         16384 ", "environment (UCGO_RNDV_THRESH=16k)",
		"UCGO_RNDV_SCHEME         get ", "UCGO_MATCHING_MODE       suspend ", "UCGO_KEEPALIVE_INTERVAL  1s ",
		"UCGO_TSL                 rc", "not read by ucgo (misspelt?)", "UCGO_PMI                 auto",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !regexp.MustCompile(`(?m)^  UCGO_STRIPE_ALWAYS +true +environment \(UCGO_STRIPE_ALWAYS=1\)$`).MatchString(out) {
		t.Errorf("UCGO_STRIPE_ALWAYS not shown as set:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^  UCGO_THREAD_SAFE +false +default$`).MatchString(out) {
		t.Errorf("UCGO_THREAD_SAFE not shown as a default:\n%s", out)
	}
	t.Setenv("UCGO_MATCHING_MODE", "sometimes")
	var b strings.Builder
	if err := run([]string{"info", "-c"}, &b); err == nil || !strings.Contains(err.Error(), "UCGO_MATCHING_MODE") {
		t.Fatalf("bad UCGO_MATCHING_MODE: %v", err)
	}
}

var addrRE = regexp.MustCompile(`(?m)^# worker address: ([0-9a-f]+)$`)

// -e prints a worker address; given another worker's address (hex or
// @file) it prints the lanes: shm first between workers of one host, rc
// only when UCGO_TLS says so.
func TestInfoEndpoint(t *testing.T) {
	out := info(t, "-e")
	m := addrRE.FindStringSubmatch(out)
	if m == nil || !strings.Contains(out, "  shm: pid ") {
		t.Fatalf("no worker address:\n%s", out)
	}
	out = info(t, "-e", "-p", m[1])
	if !regexp.MustCompile(`(?m)^# lanes:\n#   0: shm/memory \(am, tag, rma\)`).MatchString(out) {
		t.Fatalf("lanes towards a worker of this host:\n%s", out)
	}
	file := filepath.Join(t.TempDir(), "addr")
	if err := os.WriteFile(file, []byte(m[1]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("UCGO_TLS", "shm")
	if out = info(t, "-e", "-p", "@"+file); !strings.Contains(out, "#   0: shm/memory") || strings.Contains(out, "#   1:") {
		t.Fatalf("lanes with UCGO_TLS=shm:\n%s", out)
	}
	var b strings.Builder
	if err := run([]string{"info", "-e", "-p", "zz"}, &b); err == nil {
		t.Fatal("a peer address that is not hex was accepted")
	}
	if err := run([]string{"info", "-e", "-p", "0011"}, &b); err == nil {
		t.Fatal("a truncated peer address was accepted")
	}
	if err := run([]string{"info", "-p", m[1]}, &b); !errors.Is(err, errUsage) {
		t.Fatalf("-p without -e: %v", err)
	}
	if err := run([]string{"nfo"}, &b); !errors.Is(err, errUsage) {
		t.Fatalf("unknown command: %v", err)
	}
}
