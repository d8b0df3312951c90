package release

// Store stores v at p with release order (a plain MOV).
//
//go:noescape
func Store(p *uint64, v uint64)
