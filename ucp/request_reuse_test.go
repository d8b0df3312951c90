package ucp

import (
	"context"
	"reflect"
	"testing"
	"time"
)

// A released request is as clean as a new one, whatever path it took:
// putReq clears only the eager part of a request that stayed on the eager
// path (reqEager), all of it otherwise.
func TestRequestReuseClean(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
		size int
		sync bool
	}{
		{"short", Config{}, 8, false},
		{"bcopy", Config{ShortThresh: -1}, 64, false},
		{"zcopy", Config{ShortThresh: -1, ZcopyThresh: 1}, 256, false},
		{"rndv-get", Config{RndvThresh: 1}, 4096, false},
		{"rndv-put", Config{RndvThresh: 1, RndvScheme: RndvPut}, 4096, false},
		{"sync", Config{}, 8, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws, ep := shmPair(t, c.cfg)
			out, in := pattern(c.size, 3), make([]byte, c.size)
			var used []*Request
			for i := 0; i < 3; i++ {
				r := ws[1].TagRecv(in, 7, exact, nil)
				send := ep.TagSend
				if c.sync {
					send = ep.TagSendSync
				}
				s := send(out, 7, &Params{UserData: i})
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				for !r.Done() || !s.Done() {
					if ctx.Err() != nil {
						t.Fatal("no completion in 20 s")
					}
					ws[0].Progress()
					ws[1].Progress()
				}
				cancel()
				if r.Err() != nil || s.Err() != nil {
					t.Fatal(r.Err(), s.Err())
				}
				used = append(used, r, s)
				r.Release()
				s.Release()
			}
			// A send on a closed endpoint completes at once, before any
			// protocol step (a synchronous one stays marked synchronous
			// unless its reuse clears that).
			cr := ep.Close(CloseForce)
			if !cr.Done() {
				t.Fatal("forced close did not complete at once")
			}
			cr.Release()
			used = append(used, cr)
			s := ep.TagSendSync(out, 7, nil)
			if s.Err() == nil {
				t.Fatal("send on a closed endpoint succeeded")
			}
			s.Release()
			used = append(used, s)
			for i, r := range used {
				if err := dirtyFields(r); err != "" {
					t.Errorf("released request %d (receive, send, ..., close, send) keeps %s", i, err)
				}
			}
		})
	}
}

// dirtyFields names the fields of released request r that a new request
// would not have: all but its worker, its released mark, its reusable
// header buffer (empty), its completion function and its matcher entry's
// link back to it.
func dirtyFields(r *Request) string {
	if !r.released || r.w == nil || len(r.hdr) != 0 || r.comp.Func == nil || r.mr.Data != r {
		return "a broken pool state"
	}
	var walk func(v reflect.Value, path string) string
	walk = func(v reflect.Value, path string) string {
		for i := 0; i < v.NumField(); i++ {
			f, name := v.Field(i), v.Type().Field(i).Name
			switch path + name {
			case "reqEager", "mr", "comp":
				if bad := walk(f, name+"."); bad != "" {
					return bad
				}
				continue
			case "reqEager.w", "reqEager.released", "hdr", "comp.Func", "mr.Data":
				continue
			}
			if !f.IsZero() {
				return path + name
			}
		}
		return ""
	}
	return walk(reflect.ValueOf(r).Elem(), "")
}
