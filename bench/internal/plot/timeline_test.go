package plot

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestWriteTimeline(t *testing.T) {
	tl := Timeline{Title: "failover <rc>", YLabel: "messages per 10 ms", Bin: 10 * time.Millisecond,
		Counts: []int{5, 7, 0, 0, 3, 6},
		Marks:  []Mark{{At: 15 * time.Millisecond, Label: "link down"}, {At: 38 * time.Millisecond, Label: "switched"}}}
	var b bytes.Buffer
	if err := WriteTimeline(&b, tl); err != nil {
		t.Fatal(err)
	}
	c := elements(t, b.Bytes())
	// Empty bins draw no bar.
	if c["rect.bin"] != 4 || c["line.mark"] != 2 || c["line.legend"] != 2 {
		t.Errorf("bins %d marks %d legend %d, want 4 2 2", c["rect.bin"], c["line.mark"], c["line.legend"])
	}
	if !strings.Contains(b.String(), "failover &lt;rc&gt;") || !strings.Contains(b.String(), "switched at 38ms") {
		t.Errorf("title or mark label missing:\n%s", b.String())
	}
	if err := WriteTimeline(&b, Timeline{}); err == nil {
		t.Error("a timeline without a bin width was drawn")
	}
}
