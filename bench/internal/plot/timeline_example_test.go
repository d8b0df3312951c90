package plot_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/ucgo/ucgo/bench/internal/plot"
)

// Messages per 10 ms bin across a fault, the fault and the switch marked.
func ExampleWriteTimeline() {
	var b strings.Builder
	err := plot.WriteTimeline(&b, plot.Timeline{
		Title: "failover", YLabel: "messages per 10 ms", Bin: 10 * time.Millisecond,
		Counts: []int{120, 118, 0, 0, 117, 121},
		Marks:  []plot.Mark{{At: 20 * time.Millisecond, Label: "link down"}, {At: 38 * time.Millisecond, Label: "switched"}},
	})
	c, _ := plot.Elements([]byte(b.String()))
	fmt.Println(err, c["rect.bin"], c["line.mark"])
	// Output: <nil> 4 2
}
