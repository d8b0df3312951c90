package main

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

var wireSamples = []message{
	{Kind: kindParams, Params: params{Test: "am_lat", Transport: "shm", Sizes: []int{8, 1 << 20}, Iters: 1000,
		Warmup: 10, Window: 16, ErrMode: "peer", Wait: "sleep", Wildcard: true}},
	{Kind: kindSetup, Setup: setup{Addr: []byte{1, 2, 3, 4}, RKey: bytes.Repeat([]byte{9}, 40), MemAddr: 0x7f0012345000, MemLen: 1 << 21}},
	{Kind: kindError, Err: "test tag_lat: ucp tests need package ucp"},
	{Kind: kindSync, Seq: 300},
}

func TestWireRoundTrip(t *testing.T) {
	for _, m := range wireSamples {
		b := m.encode()
		got, err := decodeMessage(b)
		if err != nil {
			t.Fatalf("kind %d: %v", m.Kind, err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Errorf("kind %d:\n got %+v\nwant %+v", m.Kind, got, m)
		}
		// Every strict prefix is an error, never a panic.
		for i := range b {
			if _, err := decodeMessage(b[:i]); !errors.Is(err, ErrFormat) {
				t.Errorf("kind %d, %d of %d bytes: got %v, want ErrFormat", m.Kind, i, len(b), err)
			}
		}
		if _, err := decodeMessage(append(b, 0)); !errors.Is(err, ErrFormat) {
			t.Errorf("kind %d with a trailing byte: got %v", m.Kind, err)
		}
		var buf bytes.Buffer
		if err := writeFrame(&buf, &m); err != nil {
			t.Fatal(err)
		}
		if got, err := readFrame(&buf); err != nil || !reflect.DeepEqual(got, m) {
			t.Errorf("frame of kind %d: %+v, %v", m.Kind, got, err)
		}
	}
}

func TestWireRejects(t *testing.T) {
	bad := map[string][]byte{
		"magic":   []byte("UCGX\x01\x01"),
		"version": []byte("UCGP\x02\x04\x01"),
		"kind":    []byte("UCGP\x01\x09"),
		"no size": (&message{Kind: kindParams, Params: params{Test: "a", Transport: "b"}}).encode(),
		"size 0":  (&message{Kind: kindParams, Params: params{Test: "a", Transport: "b", Sizes: []int{0}}}).encode(),
		"control": (&message{Kind: kindParams, Params: params{Test: "a\n", Transport: "b", Sizes: []int{1}}}).encode(),
		"window":  (&message{Kind: kindParams, Params: params{Test: "a", Transport: "b", Sizes: []int{1}, Window: 5000}}).encode(),
		"huge":    append([]byte("UCGP\x01\x02"), 0xff, 0xff, 0xff, 0xff, 0x0f),
		"long":    []byte("UCGP\x01\x04\x80\x00"),
		"varint":  append([]byte("UCGP\x01\x04"), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01),
	}
	for name, b := range bad {
		if m, err := decodeMessage(b); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: got %+v, %v; want ErrFormat", name, m, err)
		}
	}
	if _, err := readFrame(bytes.NewReader([]byte{0, 1, 0, 1})); !errors.Is(err, ErrFormat) {
		t.Errorf("oversized frame: %v", err)
	}
}

// FuzzDecodeMessage: no input panics; what decodes re-encodes to the same
// bytes.
func FuzzDecodeMessage(f *testing.F) {
	for _, m := range wireSamples {
		f.Add(m.encode())
	}
	f.Add([]byte("UCGP\x01\x01"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeMessage(b)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v does not wrap ErrFormat", err)
			}
			return
		}
		if again := m.encode(); !bytes.Equal(again, b) {
			t.Fatalf("re-encoding %+v: %x, decoded from %x", m, again, b)
		}
	})
}
