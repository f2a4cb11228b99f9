package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"testing"
)

func TestSkipTags(t *testing.T) {
	for name, c := range map[string]struct {
		in   []byte
		rest int // bytes left, -1: error
	}{
		"none":            {[]byte{0, 9, 9}, 2},
		"one tag":         {[]byte{1, 5, 2, 'a', 'b', 7}, 1},
		"size past end":   {[]byte{1, 5, 9, 'a'}, -1},
		"count past end":  {[]byte{200, 1}, -1},
		"empty":           {nil, -1},
		"truncated tag":   {[]byte{1}, -1},
		"huge size":       {[]byte{1, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}, -1},
		"two, second bad": {[]byte{2, 1, 0, 2, 5}, -1},
	} {
		rest, err := skipTags(c.in)
		if c.rest < 0 && err == nil || c.rest >= 0 && (err != nil || len(rest) != c.rest) {
			t.Errorf("%s: rest %d, err %v; want %d left", name, len(rest), err, c.rest)
		}
	}
}

// A leader declaring a frame larger than the limit is refused before
// anything is allocated for it.
func TestResponseFrameIsBounded(t *testing.T) {
	var b bytes.Buffer
	binary.Write(&b, binary.BigEndian, int32(1<<30))
	c := &Conn{br: bufio.NewReader(&b), maxFrame: 1 << 20}
	if _, err := c.readFrame(); err == nil {
		t.Fatal("a 1 GiB frame was accepted")
	}
	if cap(c.buf) != 0 {
		t.Fatalf("allocated %d bytes for a refused frame", cap(c.buf))
	}
}

func FuzzSkipTags(f *testing.F) {
	f.Add([]byte{1, 5, 2, 'a', 'b', 7})
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, b []byte) {
		rest, err := skipTags(b)
		if err == nil && len(rest) > len(b) {
			t.Fatalf("rest longer than the input")
		}
	})
}
