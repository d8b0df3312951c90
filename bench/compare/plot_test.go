package main

import (
	"bytes"
	"testing"

	"github.com/ucgo/ucgo/bench/internal/plot"
)

func checkSVG(t *testing.T, b []byte) map[string]int {
	t.Helper()
	c, err := plot.Elements(b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	return c
}

// A figure from results: rows of two tools become series on the right
// panels.
func TestResultsPlot(t *testing.T) {
	res := &results{Rows: []row{
		{Test: "am_lat", Transport: "shm", Size: 8, Ours: &figures{LatMedian: 0.3}, UCX: &figures{LatMedian: 0.4}},
		{Test: "am_lat", Transport: "shm", Size: 64, Ours: &figures{LatMedian: 0.35}, UCXErr: "no"},
		{Test: "put_bw", Transport: "shm", Size: 8, Ours: &figures{BW: 30}, UCX: &figures{BW: 40}},
		{Test: "put_bw", Transport: "rc", Size: 8, Ours: &figures{BW: 3}},
	}}
	fg := res.plot(findTransportMap("shm"))
	lat, bw := fg.Panels[0], fg.Panels[1]
	if len(lat.Series) != 2 || len(lat.Series[0].Points) != 2 || len(lat.Series[1].Points) != 1 {
		t.Errorf("latency panel: %+v", lat.Series)
	}
	if len(bw.Series) != 2 || bw.Series[1].Name != "UCX put_bw" || !bw.Series[1].Dashed {
		t.Errorf("bandwidth panel: %+v", bw.Series)
	}
	var b bytes.Buffer
	if err := plot.Write(&b, fg); err != nil {
		t.Fatal(err)
	}
	checkSVG(t, b.Bytes())
}
