package tsc

import "time"

// monotonic is Go's monotonic clock in nanoseconds since the package's
// epoch.
func monotonic() Ticks { return Ticks(time.Since(epoch)) }
