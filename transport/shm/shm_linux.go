package shm

import (
	"github.com/ucgo/ucgo/uct"
)

const transportName = "shm"

// Component is the shm transport.
type Component struct{}

// New returns the shm component.
func New() *Component { return &Component{} }

// Name returns "shm".
func (*Component) Name() string { return transportName }

// Devices returns the one device, "memory".
func (*Component) Devices() ([]uct.DeviceInfo, error) {
	return []uct.DeviceInfo{{Name: "memory", Kind: "shm"}}, nil
}

var (
	_ uct.Component = (*Component)(nil)
	_ uct.MD        = (*MD)(nil)
	_ uct.Iface     = (*Iface)(nil)
	_ uct.Endpoint  = (*Endpoint)(nil)
)
