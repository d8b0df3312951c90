package plot

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Figure is one SVG file: panels side by side, each with log-scale axes
// (powers of two on x, decades on y).
type Figure struct {
	Title  string
	Panels []Panel
}

// Panel is one plot of a figure.
type Panel struct {
	Title, YLabel string
	// XLabel names the x axis (default "message size (bytes)"); XTick
	// prints the tick at x = 2^k (default: sizes as 8, 4k, 1m).
	XLabel string
	XTick  func(x float64) string
	Series []Series
}

// Series is one line. Series of the same Group share a colour; Dashed
// ones (a reference tool, UCX) are drawn dashed with open markers.
type Series struct {
	Name   string
	Group  string
	Dashed bool
	Points []XY
}

// XY is one point.
type XY struct{ X, Y float64 }

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"}

// Geometry of one panel, in SVG user units.
const (
	panelW   = 540.0
	plotL    = 75.0 // left margin (y tick labels, y label)
	plotR    = 20.0
	plotT    = 60.0 // figure title and panel title
	plotH    = 320.0
	xAxisH   = 55.0 // tick labels and x label
	legendRH = 18.0 // one legend row
)

// Write draws fg as SVG. Points with non-positive coordinates are left
// out (log scale).
func Write(w io.Writer, fg Figure) error {
	bw := bufio.NewWriter(w)
	rows := 0
	for _, p := range fg.Panels {
		rows = max(rows, len(p.Series))
	}
	width := panelW * float64(max(1, len(fg.Panels)))
	height := plotT + plotH + xAxisH + legendRH*float64(rows) + 10
	fmt.Fprintf(bw, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(bw, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(bw, `<text x="%.1f" y="20" text-anchor="middle" font-size="15">%s</text>`+"\n", width/2, esc(fg.Title))
	colours := map[string]string{}
	for _, p := range fg.Panels {
		for _, s := range p.Series {
			if _, ok := colours[s.Group]; !ok {
				colours[s.Group] = palette[len(colours)%len(palette)]
			}
		}
	}
	for i, p := range fg.Panels {
		drawPanel(bw, p, float64(i)*panelW, colours)
	}
	fmt.Fprintln(bw, "</svg>")
	return bw.Flush()
}

// logRange returns the decade-aligned bounds (log10) of vs.
func logRange(vs []float64) (lo, hi float64) {
	lo, hi = math.Floor(math.Log10(slices.Min(vs))), math.Ceil(math.Log10(slices.Max(vs)))
	if hi <= lo {
		hi = lo + 1
	}
	return lo, hi
}

func drawPanel(w *bufio.Writer, p Panel, x0 float64, colours map[string]string) {
	left, right := x0+plotL, x0+panelW-plotR
	top, bottom := plotT, plotT+plotH
	fmt.Fprintf(w, `<g class="panel">`+"\n")
	fmt.Fprintf(w, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="13">%s</text>`+"\n", (left+right)/2, top-12, esc(p.Title))
	fmt.Fprintf(w, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="black"/>`+"\n", left, top, right-left, bottom-top)
	var xs, ys []float64
	for _, s := range p.Series {
		for _, pt := range s.Points {
			if pt.X > 0 && pt.Y > 0 && !math.IsInf(pt.X, 0) && !math.IsInf(pt.Y, 0) {
				xs, ys = append(xs, pt.X), append(ys, pt.Y)
			}
		}
	}
	// Axis labels.
	xlabel, xtick := p.XLabel, p.XTick
	if xlabel == "" {
		xlabel = "message size (bytes)"
	}
	if xtick == nil {
		xtick = func(x float64) string { return SizeName(int(x)) }
	}
	fmt.Fprintf(w, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", (left+right)/2, bottom+42, esc(xlabel))
	fmt.Fprintf(w, `<text transform="translate(%.1f %.1f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", x0+18, (top+bottom)/2, esc(p.YLabel))
	if len(xs) == 0 {
		fmt.Fprintf(w, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="gray">no data</text>`+"\n</g>\n", (left+right)/2, (top+bottom)/2)
		return
	}
	// x: powers of two; y: decades.
	xlo, xhi := math.Floor(math.Log2(slices.Min(xs))), math.Ceil(math.Log2(slices.Max(xs)))
	if xhi <= xlo {
		xlo, xhi = xlo-1, xhi+1
	}
	ylo, yhi := logRange(ys)
	px := func(x float64) float64 { return left + (math.Log2(x)-xlo)/(xhi-xlo)*(right-left) }
	py := func(y float64) float64 { return bottom - (math.Log10(y)-ylo)/(yhi-ylo)*(bottom-top) }
	step := math.Max(1, math.Ceil((xhi-xlo)/10))
	for k := xhi; k >= xlo; k -= step { // from the top: 1m, 256k, ... for 8..1m
		x := left + (k-xlo)/(xhi-xlo)*(right-left)
		fmt.Fprintf(w, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x, top, x, bottom)
		fmt.Fprintf(w, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, bottom+16, xtick(math.Exp2(k)))
	}
	for k := ylo; k <= yhi; k++ {
		y := bottom - (k-ylo)/(yhi-ylo)*(bottom-top)
		fmt.Fprintf(w, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", left, y, right, y)
		fmt.Fprintf(w, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y+4, decade(k))
	}
	for i, s := range p.Series {
		col := colours[s.Group]
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		var pts []string
		for _, pt := range s.Points {
			if pt.X > 0 && pt.Y > 0 && !math.IsInf(pt.X, 0) && !math.IsInf(pt.Y, 0) {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(pt.X), py(pt.Y)))
			}
		}
		fmt.Fprintf(w, `<g class="series"><title>%s</title>`+"\n", esc(s.Name))
		if len(pts) > 1 {
			fmt.Fprintf(w, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(pts, " "), col, dash)
		}
		for _, xyStr := range pts {
			cx, cy, _ := strings.Cut(xyStr, ",")
			if s.Dashed {
				fmt.Fprintf(w, `<rect class="point" x="%s" y="%s" width="7" height="7" transform="translate(-3.5 -3.5)" fill="white" stroke="%s"/>`+"\n", cx, cy, col)
			} else {
				fmt.Fprintf(w, `<circle class="point" cx="%s" cy="%s" r="3.5" fill="%s"/>`+"\n", cx, cy, col)
			}
		}
		fmt.Fprintln(w, "</g>")
		// Legend row under the x axis.
		ly := bottom + xAxisH + legendRH*float64(i) + 4
		fmt.Fprintf(w, `<line class="legend" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s/>`+"\n", left, ly, left+30, ly, col, dash)
		fmt.Fprintf(w, `<text x="%.1f" y="%.1f">%s</text>`+"\n", left+38, ly+4, esc(s.Name))
	}
	fmt.Fprintln(w, "</g>")
}

// decade prints 10^k: 0.01, 0.1, 1, 10, ..., 100000, then 1e6.
func decade(k float64) string {
	if k >= -3 && k <= 5 {
		return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", math.Pow(10, k)), "0"), ".")
	}
	return fmt.Sprintf("1e%d", int(k))
}

func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// SizeName prints a size as 8, 4k, 1m.
func SizeName(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + "m"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + "k"
	}
	return strconv.Itoa(n)
}

// Elements parses an SVG and counts its elements by name, and by
// name.class for those with a class attribute ("text" counts every text
// element): what a test checks of a drawing.
func Elements(b []byte) (map[string]int, error) {
	dec := xml.NewDecoder(bytes.NewReader(b))
	counts := map[string]int{}
	root := ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("not well-formed XML: %w", err)
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
			if se.Name.Local == "text" && key != "text" {
				counts["text"]++
			}
		}
	}
	if root != "svg" {
		return nil, fmt.Errorf("root element %q, want svg", root)
	}
	return counts, nil
}
