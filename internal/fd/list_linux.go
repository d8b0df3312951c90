package fd

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
)

// List returns the descriptors open in this process, sorted, from
// /proc/self/fd (without the one List opens to read it).
func List() ([]int, error) {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return nil, fmt.Errorf("fd: list: %w", err)
	}
	names, err := d.Readdirnames(-1)
	self := int(d.Fd())
	d.Close()
	if err != nil {
		return nil, fmt.Errorf("fd: list: %w", err)
	}
	var out []int
	for _, s := range names {
		n, err := strconv.Atoi(s)
		if err == nil && n != self {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out, nil
}

// Leaked returns the descriptors of after that are not in before: what
// the work between two List calls left open.
func Leaked(before, after []int) []int {
	var out []int
	for _, n := range after {
		if _, found := slices.BinarySearch(before, n); !found {
			out = append(out, n)
		}
	}
	return out
}

// Describe names each descriptor of ns by its /proc/self/fd link target
// (for a failure message).
func Describe(ns []int) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		t, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(n))
		if err != nil {
			t = err.Error()
		}
		out[i] = strconv.Itoa(n) + " -> " + t
	}
	return out
}

// CheckRounds runs round once (the runtime opens its own descriptors,
// such as the poller's, on first use), lists the open descriptors, runs
// round three more times and fails tb, naming them, if descriptors were
// left open: round must close everything it opens.
func CheckRounds(tb testing.TB, what string, round func()) {
	tb.Helper()
	round()
	before, err := List()
	if err != nil {
		tb.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		round()
	}
	after, err := List()
	if err != nil {
		tb.Fatal(err)
	}
	if l := Leaked(before, after); len(l) > 0 {
		tb.Fatalf("descriptors left open by %s: %v", what, Describe(l))
	}
}
