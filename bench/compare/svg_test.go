package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
)

// checkSVG parses b as XML and counts the elements named name with the
// given class attribute ("" for any).
func checkSVG(t *testing.T, b []byte) map[string]int {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	counts := map[string]int{}
	root := ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, b)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if root == "" {
				root = se.Name.Local
			}
			key := se.Name.Local
			for _, a := range se.Attr {
				if a.Name.Local == "class" {
					key += "." + a.Value
				}
			}
			counts[key]++
			if se.Name.Local == "text" {
				counts["text"]++
			}
		}
	}
	if root != "svg" {
		t.Fatalf("root element %q, want svg", root)
	}
	return counts
}

func TestWriteSVG(t *testing.T) {
	fg := figure{
		Title: "ucgo shm vs UCX <posix> & co",
		Panels: []panel{
			{Title: "latency", YLabel: "latency (µs)", Series: []series{
				{Name: "ucgo am_lat", Group: "am_lat", Points: []xy{{8, 0.3}, {64, 0.35}, {1024, 0.6}}},
				{Name: "UCX am_lat", Group: "am_lat", Dashed: true, Points: []xy{{8, 0.45}, {64, 0.5}, {1024, 0}}},
			}},
			{Title: "bandwidth", YLabel: "bandwidth (MB/s)", Series: []series{
				{Name: "ucgo put_bw", Group: "put_bw", Points: []xy{{8, 30}, {1 << 20, 20000}}},
			}},
			{Title: "empty", YLabel: "nothing"},
		},
	}
	var b bytes.Buffer
	if err := writeSVG(&b, fg); err != nil {
		t.Fatal(err)
	}
	c := checkSVG(t, b.Bytes())
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
	if err := writeSVG(&b, fg); err != nil {
		t.Fatal(err)
	}
	checkSVG(t, b.Bytes())
}
