package protobuf

import (
	"bytes"
	"errors"
	"slices"
	"testing"
)

func TestIndexesRoundTrip(t *testing.T) {
	cases := []struct {
		indexes []int
		wire    []byte
	}{
		{[]int{0}, []byte{0}},
		{nil, []byte{0}},
		{[]int{1}, []byte{2, 2}},
		{[]int{0, 2, 1}, []byte{6, 0, 4, 2}},
		{[]int{200}, []byte{2, 0x90, 0x03}},
	}
	for _, c := range cases {
		got := EncodeIndexes(c.indexes)
		if !bytes.Equal(got, c.wire) {
			t.Errorf("EncodeIndexes(%v) = %x, want %x", c.indexes, got, c.wire)
		}
		// The payload follows the indexes; the count must stop before it.
		framed := append(slices.Clone(got), 0x08, 0x96, 0x01)
		dec, n, err := DecodeIndexes(framed)
		if err != nil {
			t.Fatalf("DecodeIndexes(%x): %v", framed, err)
		}
		want := c.indexes
		if len(want) == 0 {
			want = []int{0}
		}
		if !slices.Equal(dec, want) || n != len(c.wire) {
			t.Errorf("DecodeIndexes(%x) = %v, %d; want %v, %d", framed, dec, n, want, len(c.wire))
		}
	}
}

func TestDecodeIndexesRejectsHostileBytes(t *testing.T) {
	cases := map[string][]byte{
		"empty":                {},
		"truncated varint":     {0x80},
		"negative count":       {1},
		"count past the bytes": {10, 2},
		"count too large":      {0xfe, 0x01},
		"negative index":       {2, 1},
		"index over 32 bits":   {2, 0xff, 0xff, 0xff, 0xff, 0x7f},
		"varint over 5 bytes":  {0x80, 0x80, 0x80, 0x80, 0x80, 0x00},
	}
	for name, b := range cases {
		if idx, n, err := DecodeIndexes(b); err == nil || !errors.Is(err, ErrBadIndexes) {
			t.Errorf("%s: DecodeIndexes(%x) = %v, %d, %v; want ErrBadIndexes", name, b, idx, n, err)
		}
	}
}

const nestedSchema = `syntax = "proto3";
package acme;
message First { int32 a = 1; }
message Second {
  map<string, int32> counts = 1;
  message Inner { string s = 1; }
  message Other { Inner i = 1; message Deep { bool b = 1; } }
}
`

func TestMessageIndexes(t *testing.T) {
	f := mustParse(t, nestedSchema, nil)
	cases := map[string][]int{
		"acme.First":             {0},
		"First":                  {0},
		"acme.Second":            {1},
		"acme.Second.Inner":      {1, 0}, // the map entry of counts is not counted
		"acme.Second.Other":      {1, 1},
		"acme.Second.Other.Deep": {1, 1, 0},
		"Second.Other.Deep":      {1, 1, 0},
	}
	for name, want := range cases {
		got, err := f.MessageIndexes(name)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("MessageIndexes(%q) = %v, %v; want %v", name, got, err, want)
			continue
		}
		md, err := f.messageAt(got)
		if err != nil || string(md.Name()) != name[len(name)-len(md.Name()):] {
			t.Errorf("messageAt(%v) = %v, %v; want %s", got, md, err, name)
		}
	}
	for _, name := range []string{"acme.Missing", "acme.Second.CountsEntry", "", "acme.First.Nope"} {
		if got, err := f.MessageIndexes(name); err == nil {
			t.Errorf("MessageIndexes(%q) = %v, want an error", name, got)
		}
	}
	for _, idx := range [][]int{{2}, {0, 0}, {1, 5}, {-1}} {
		if md, err := f.messageAt(idx); err == nil {
			t.Errorf("messageAt(%v) = %v, want an error", idx, md.FullName())
		}
	}
	if got := f.MessageNames(); !slices.Equal(got, []string{"acme.First", "acme.Second", "acme.Second.Inner", "acme.Second.Other", "acme.Second.Other.Deep"}) {
		t.Errorf("MessageNames() = %q", got)
	}
}
