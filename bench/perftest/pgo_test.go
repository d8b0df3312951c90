package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// TestDefaultPGO checks that perftest is built with its profile
// (default.pgo, which go build and go test use for a main package by
// default) and that the profile covers the tag paths it was taken for:
// their functions are named in its string table. A profile deleted, or
// one left stale by renames of these functions, fails here.
func TestDefaultPGO(t *testing.T) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		t.Fatal("no build info")
	}
	pgo := ""
	for _, s := range bi.Settings {
		if s.Key == "-pgo" {
			pgo = s.Value
		}
	}
	if filepath.Base(pgo) != "default.pgo" {
		t.Fatalf("built with -pgo %q, want this package's default.pgo", pgo)
	}
	f, err := os.Open("default.pgo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("default.pgo is no gzip-compressed pprof profile: %v", err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("default.pgo: %v", err)
	}
	for _, fn := range []string{
		"github.com/ucgo/ucgo/ucp.(*Endpoint).TagSend",
		"github.com/ucgo/ucgo/ucp.(*Worker).TagRecv",
		"github.com/ucgo/ucgo/ucp.(*Worker).Progress",
		"github.com/ucgo/ucgo/ucp.(*Worker).eagerArrive",
		"github.com/ucgo/ucgo/transport/shm.(*Iface).deliver",
		"github.com/ucgo/ucgo/transport/shm.(*Endpoint).AMShort",
	} {
		if !bytes.Contains(raw, []byte(fn)) {
			t.Errorf("default.pgo has no samples of %s: regenerate it (doc.go)", fn)
		}
	}
}
