package main

import (
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"
)

// -cpuprofile under -l: the client and the server process each write a
// CPU profile (gzip-compressed pprof) of the run.
func TestLocalCPUProfile(t *testing.T) {
	bin := buildBinary(t)
	prof := filepath.Join(t.TempDir(), "tag.pprof")
	out, errOut, code := runBinary(t, bin, "-l", "-t", "tag_lat", "-s", "8", "-n", "1000", "-w", "100", "--json", "-cpuprofile", prof)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	checkRunJSON(t, "tag_lat", "shm", 1000, []int{8}, out)
	for _, name := range []string{prof, prof + ".server"} {
		f, err := os.Open(name)
		if err != nil {
			t.Fatalf("no profile: %v", err)
		}
		if _, err := gzip.NewReader(f); err != nil {
			t.Errorf("%s is no gzip-compressed pprof profile: %v", name, err)
		}
		f.Close()
	}
}
