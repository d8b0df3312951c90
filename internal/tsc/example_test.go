package tsc_test

import (
	"fmt"
	"time"

	"github.com/ucgo/ucgo/internal/tsc"
)

func Example() {
	conv := tsc.NewConverter() // calibrates once per process
	start := tsc.Now()
	time.Sleep(2 * time.Millisecond)
	elapsed := conv.Duration(tsc.Now() - start)
	fmt.Println(elapsed >= 2*time.Millisecond, elapsed < time.Second)
	// Output: true true
}
