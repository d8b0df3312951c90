package testproc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A race-enabled child reports a data race on its stderr and exits with
// status 66, but only when it exits by itself: a child that a test kills
// at its end, or whose exit status the test does not look at, would lose
// the report's verdict. So each child writes its race reports to files
// under the test's temporary directory (GORACE log_path, one file per
// process, named prefix.PID), and the child's cleanup fails the test
// with every report it finds there. Without the race detector the option
// is ignored and no file appears.

// raceLogPrefix returns the log_path prefix for one child of t.
func raceLogPrefix(t testing.TB) string {
	return filepath.Join(t.TempDir(), "race")
}

// childGORACE is the child's GORACE: the parent's options (or, if it has
// none, no sleep at exit, which would cost a race-enabled child 1 s) with
// the log path added.
func childGORACE(parent, logPrefix string) string {
	if parent == "" {
		parent = "atexit_sleep_ms=0"
	}
	return parent + " log_path=" + logPrefix
}

// reportRaces fails t with the race reports the child of role wrote.
func reportRaces(t testing.TB, role, logPrefix string) {
	files, _ := filepath.Glob(logPrefix + ".*")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil || len(strings.TrimSpace(string(b))) == 0 {
			continue
		}
		t.Errorf("child %s reported a data race (%s):\n%s", role, filepath.Base(f), b)
	}
}
