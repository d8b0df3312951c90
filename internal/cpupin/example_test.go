package cpupin_test

import (
	"fmt"
	"runtime"

	"github.com/ucgo/ucgo/internal/cpupin"
)

// A benchmark's side confines itself to the last CPU while it measures.
func ExampleProcess() {
	restore := cpupin.Process(runtime.NumCPU() - 1)
	defer restore()
	fmt.Println(runtime.GOMAXPROCS(0))
	// Output: 1
}
