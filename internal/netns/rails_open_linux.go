package netns

import (
	"os"

	"go.uber.org/multierr"
)

// OpenRails is [NewRails] for programs (bench/perftest's failover runs):
// it returns an error wrapping [ErrNotRoot] when not root, and the caller
// must Close the rails.
func OpenRails(n int, opts ...Option) (*Rails, error) {
	if os.Geteuid() != 0 {
		return nil, ErrNotRoot
	}
	r, err := newRails(n, opts)
	if err != nil && r != nil {
		err = multierr.Append(err, r.Close())
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}
