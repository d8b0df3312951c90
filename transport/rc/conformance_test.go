package rc

import (
	"testing"

	"github.com/ucgo/ucgo/uct/ucttest"
)

func TestConformance(t *testing.T) {
	ucttest.Run(t, loopPair)
}
