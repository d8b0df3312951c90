package plot

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

func elements(t *testing.T, b []byte) map[string]int {
	t.Helper()
	c, err := Elements(b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	return c
}

func TestWriteSVG(t *testing.T) {
	fg := Figure{
		Title: "ucgo shm vs UCX <posix> & co",
		Panels: []Panel{
			{Title: "latency", YLabel: "latency (µs)", Series: []Series{
				{Name: "ucgo am_lat", Group: "am_lat", Points: []XY{{8, 0.3}, {64, 0.35}, {1024, 0.6}}},
				{Name: "UCX am_lat", Group: "am_lat", Dashed: true, Points: []XY{{8, 0.45}, {64, 0.5}, {1024, 0}}},
			}},
			{Title: "bandwidth", YLabel: "bandwidth (MB/s)", Series: []Series{
				{Name: "ucgo put_bw", Group: "put_bw", Points: []XY{{8, 30}, {1 << 20, 20000}}},
			}},
			{Title: "empty", YLabel: "nothing"},
		},
	}
	var b bytes.Buffer
	if err := Write(&b, fg); err != nil {
		t.Fatal(err)
	}
	c := elements(t, b.Bytes())
	// The point with y=0 cannot be on a log scale and is left out.
	if got := c["circle.point"] + c["rect.point"]; got != 7 {
		t.Errorf("%d points drawn, want 7", got)
	}
	if c["g.series"] != 3 || c["line.legend"] != 3 || c["g.panel"] != 3 {
		t.Errorf("series, legend entries, panels: %d, %d, %d; want 3 each", c["g.series"], c["line.legend"], c["g.panel"])
	}
	s := b.String()
	for _, want := range []string{"message size (bytes)", "latency (µs)", "bandwidth (MB/s)", "ucgo am_lat", "UCX am_lat",
		"&lt;posix&gt; &amp; co", "no data", ">1m<", ">16<", "stroke-dasharray"} {
		if !strings.Contains(s, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
}

// A panel with its own x axis: peers, ticks as plain numbers.
func TestXAxis(t *testing.T) {
	fg := Figure{Title: "scaling", Panels: []Panel{{
		Title: "connect", YLabel: "ms", XLabel: "peers", XTick: func(x float64) string { return strconv.Itoa(int(x)) },
		Series: []Series{{Name: "shm", Group: "shm", Points: []XY{{1, 0.2}, {4, 0.8}, {256, 60}}}},
	}}}
	var b bytes.Buffer
	if err := Write(&b, fg); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	for _, want := range []string{">peers<", ">256<", ">1<"} {
		if !strings.Contains(s, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	if strings.Contains(s, "message size") {
		t.Error("the default x label was drawn")
	}
	if c := elements(t, b.Bytes()); c["circle.point"] != 3 {
		t.Errorf("%d points, want 3", c["circle.point"])
	}
}

func TestSizeName(t *testing.T) {
	for n, want := range map[int]string{8: "8", 1000: "1000", 4096: "4k", 1 << 20: "1m", 3 << 20: "3m", 1536: "1536"} {
		if got := SizeName(n); got != want {
			t.Errorf("SizeName(%d) = %q, want %q", n, got, want)
		}
	}
}
