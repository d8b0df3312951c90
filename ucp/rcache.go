package ucp

import (
	"go.uber.org/multierr"

	"github.com/ucgo/ucgo/uct"
)

// Rendezvous registers the user's buffer on one side and unpacks the
// peer's key on the other, for every message. Both are cached, so a
// buffer sent again and again (the common case in MPI codes) costs one
// map lookup per message on each side:
//
//   - the registration cache (per worker) maps (memory domain, buffer,
//     length, access) to a registration and its packed key bundle. An
//     entry keeps its buffer referenced, so the memory cannot be freed and
//     reused under it; unused entries are evicted least recently used
//     first beyond regCacheMax entries or Config.RcacheMax bytes (default
//     64 MiB, UCGO_RCACHE_MAX), so what the cache keeps alive
//     is bounded by bytes. Each entry remembers the endpoints that used
//     it; when an endpoint is closed or purged, the entries no other open
//     endpoint used are evicted, so a closed peer's buffers become
//     collectable.
//   - the key cache (per endpoint lane) maps a packed key bundle to the
//     unpacked key; keys name their registration uniquely (shm: slot and
//     generation; rc: the MR's key), so a stale entry is never hit by a
//     new registration. It is emptied when the lanes close.
//
// Entries are reference counted: one used by a rendezvous in flight is
// never closed under it.
const (
	regCacheMax      = 256
	defaultRcacheMax = 64 << 20
	keyCacheMax      = 64
)

type regKey struct {
	md   *mdEntry
	p    *byte
	n    int
	acc  uct.Access
	more uint32 // the other memory domains (ifaces by index) it is registered with
}

type regEntry struct {
	key    regKey
	mem    uct.Mem
	more   []uct.Mem // the registrations with the endpoint's other lanes' domains (stripe.go)
	bundle []byte    // packBundle of the memory's keys
	refs   int
	cached bool
	lru    entryLinks[regEntry]
	users  []*Endpoint // endpoints that used the entry since it was cached
}

// entryLinks links an unused cache entry into its LRU list.
type entryLinks[T any] struct {
	prev, next *T
	in         bool
}

type regCache struct {
	m        map[regKey]*regEntry
	lru      lruList[regEntry]
	bytes    int
	maxBytes int
	byEP     map[*Endpoint][]*regEntry // cached entries by user
}

// lruList is an intrusive list of unused entries, oldest first.
type lruList[T any] struct {
	head, tail *T
	links      func(*T) *entryLinks[T]
	n          int
}

func (l *lruList[T]) push(e *T) {
	k := l.links(e)
	k.prev, k.next, k.in = l.tail, nil, true
	if l.tail != nil {
		l.links(l.tail).next = e
	} else {
		l.head = e
	}
	l.tail = e
	l.n++
}

func (l *lruList[T]) remove(e *T) {
	k := l.links(e)
	if !k.in {
		return
	}
	if k.prev != nil {
		l.links(k.prev).next = k.next
	} else {
		l.head = k.next
	}
	if k.next != nil {
		l.links(k.next).prev = k.prev
	} else {
		l.tail = k.prev
	}
	k.prev, k.next, k.in = nil, nil, false
	l.n--
}

// newRegCache returns a cache that keeps at most maxBytes of unused
// registrations (0: defaultRcacheMax).
func newRegCache(maxBytes int) *regCache {
	if maxBytes <= 0 {
		maxBytes = defaultRcacheMax
	}
	return &regCache{m: map[regKey]*regEntry{}, maxBytes: maxBytes, byEP: map[*Endpoint][]*regEntry{},
		lru: lruList[regEntry]{links: func(e *regEntry) *entryLinks[regEntry] { return &e.lru }}}
}

// get returns a registration of buf (non-empty) with access on md for
// ep, taking a reference (lock held).
func (c *regCache) get(ep *Endpoint, wi *wiface, buf []byte, acc uct.Access) (*regEntry, error) {
	md := wi.md
	k := regKey{md: md, p: &buf[0], n: len(buf), acc: acc, more: ep.regMore}
	if e := c.m[k]; e != nil {
		c.lru.remove(e)
		e.refs++
		c.addUser(e, ep)
		return e, nil
	}
	mem, err := md.md.Register(buf, acc)
	if err != nil {
		return nil, err
	}
	e := &regEntry{key: k, mem: mem, refs: 1, cached: true}
	e.bundle = packBundle([]bundlePart{{mdPartName(md.comp.Name(), wi.ord), mem.PackRKey()}})
	if k.more != 0 {
		if err := e.registerMore(ep, wi, buf, acc); err != nil {
			e.closeMems()
			return nil, err
		}
	}
	c.m[k] = e
	c.bytes += len(buf)
	c.addUser(e, ep)
	c.trim()
	return e, nil
}

// addUser records that ep uses e.
func (c *regCache) addUser(e *regEntry, ep *Endpoint) {
	for _, u := range e.users {
		if u == ep {
			return
		}
	}
	e.users = append(e.users, ep)
	c.byEP[ep] = append(c.byEP[ep], e)
}

// releaseEP forgets ep as a user and evicts the entries no other
// endpoint used; entries in flight are closed when their last reference
// goes (lock held).
func (c *regCache) releaseEP(ep *Endpoint) {
	es := c.byEP[ep]
	delete(c.byEP, ep)
	for _, e := range es {
		e.users = removePtr(e.users, ep)
		if len(e.users) == 0 && e.cached {
			c.evict(e)
		}
	}
}

func removePtr[T any](s []*T, p *T) []*T {
	for i, x := range s {
		if x == p {
			s[i] = s[len(s)-1]
			s[len(s)-1] = nil
			return s[:len(s)-1]
		}
	}
	return s
}

// put drops a reference; an unused entry stays cached (lock held).
func (c *regCache) put(e *regEntry) {
	if e.refs--; e.refs > 0 {
		return
	}
	if !e.cached {
		e.closeMems()
		return
	}
	c.lru.push(e)
	c.trim()
}

// trim evicts unused entries beyond the limits.
func (c *regCache) trim() {
	for c.lru.head != nil && (len(c.m) > regCacheMax || c.bytes > c.maxBytes) {
		c.evict(c.lru.head)
	}
}

func (c *regCache) evict(e *regEntry) {
	c.lru.remove(e)
	delete(c.m, e.key)
	c.bytes -= e.key.n
	e.cached = false
	for _, u := range e.users {
		if es := removePtr(c.byEP[u], e); len(es) > 0 {
			c.byEP[u] = es
		} else {
			delete(c.byEP, u)
		}
	}
	e.users = nil
	if e.refs == 0 {
		e.closeMems()
	}
}

// close deregisters every entry; entries still referenced are closed when
// their last reference goes.
func (c *regCache) close() error {
	var err error
	for _, e := range c.m {
		c.lru.remove(e)
		e.cached = false
		if e.refs == 0 {
			err = multierr.Append(err, e.closeMems())
		}
	}
	clear(c.m)
	clear(c.byEP)
	c.bytes = 0
	return err
}

// keyEntry is a cached unpacked remote key of one lane.
type keyEntry struct {
	c      *keyCache
	bundle string
	key    uct.RKey
	refs   int
	cached bool
	lru    entryLinks[keyEntry]
}

type keyCache struct {
	m   map[string]*keyEntry
	lru lruList[keyEntry]
}

// laneKeyRef returns the unpacked key of lane i for the packed bundle b,
// taking a reference (lock held).
func (ep *Endpoint) laneKeyRef(b []byte, i int) (*keyEntry, error) {
	ln := &ep.lanes[i]
	if ln.keys == nil {
		ln.keys = &keyCache{m: map[string]*keyEntry{}, lru: lruList[keyEntry]{links: func(e *keyEntry) *entryLinks[keyEntry] { return &e.lru }}}
	}
	c := ln.keys
	if e := c.m[string(b)]; e != nil {
		c.lru.remove(e)
		e.refs++
		return e, nil
	}
	k, err := ep.unpackLaneKey(b, i)
	if err != nil {
		return nil, err
	}
	e := &keyEntry{c: c, bundle: string(b), key: k, refs: 1, cached: true}
	c.m[e.bundle] = e
	c.trim()
	return e, nil
}

// put drops a reference; an unused key stays cached (lock held).
func (c *keyCache) put(e *keyEntry) {
	if e.refs--; e.refs > 0 {
		return
	}
	if !e.cached {
		e.key.Close()
		return
	}
	c.lru.push(e)
	c.trim()
}

func (c *keyCache) trim() {
	for c.lru.head != nil && len(c.m) > keyCacheMax {
		e := c.lru.head
		c.lru.remove(e)
		delete(c.m, e.bundle)
		e.cached = false
		e.key.Close()
	}
}

// close closes every unused key; keys in use are closed when released.
func (c *keyCache) close() {
	for _, e := range c.m {
		c.lru.remove(e)
		e.cached = false
		if e.refs == 0 {
			e.key.Close()
		}
	}
	clear(c.m)
}
