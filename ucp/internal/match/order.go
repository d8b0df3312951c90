package match

import (
	"cmp"
	"slices"
)

// Posted receives are linked only in their exact-tag bucket or in the
// wildcard list, each in post order, as UCX's expected queues are: a
// receive costs one list on post and on match. Post order across lists
// is the receives' sequence numbers; the paths that need all receives
// in that order (failure, purge, resume, drain) build it with postedOrder.

// postedOrder returns every posted receive in post order. It allocates
// and walks every bucket head, which only the failure and drain paths
// pay.
func (m *Matcher) postedOrder() []*Recv {
	if m.nrecv == 0 {
		return nil
	}
	out := make([]*Recv, 0, m.nrecv)
	for r := m.wild.head; r != nil; r = r.snext {
		out = append(out, r)
	}
	for i := range m.exact {
		for r := m.exact[i].head; r != nil; r = r.snext {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b *Recv) int { return cmp.Compare(a.seq, b.seq) })
	return out
}
