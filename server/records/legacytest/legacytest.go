// Package legacytest frames and parses pre-0.11 message sets (magic 0 and
// 1) the way an old client does, with kmsg's MessageV0/V1 rather than
// ferry's own codec, so tests of the conversions check ferry against an
// independent reading of the format.
package legacytest

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Message is one message of a legacy message set as an old client sees it.
// Timestamp is -1 for magic 0, which has none.
type Message struct {
	Offset     int64
	Magic      int8
	Attrs      int8
	Timestamp  int64
	Key, Value []byte
}

// Parse decodes a message set, failing t on bad framing or a CRC-32 that
// does not match, as a pre-0.11 consumer would refuse it.
func Parse(t testing.TB, set []byte) []Message {
	t.Helper()
	var out []Message
	for len(set) > 0 {
		if len(set) < 17 {
			t.Fatalf("%d bytes left, too few for a message", len(set))
		}
		end := 12 + int(binary.BigEndian.Uint32(set[8:]))
		if end > len(set) {
			t.Fatalf("message of %d bytes, %d left", end, len(set))
		}
		entry := set[:end]
		if got, want := crc32.ChecksumIEEE(entry[16:]), binary.BigEndian.Uint32(entry[12:]); got != want {
			t.Fatalf("message at %d: crc %#x, computed %#x", binary.BigEndian.Uint64(entry), want, got)
		}
		out = append(out, parseOne(t, entry))
		set = set[end:]
	}
	return out
}

func parseOne(t testing.TB, entry []byte) Message {
	t.Helper()
	switch entry[16] {
	case 0:
		var v kmsg.MessageV0
		if err := v.ReadFrom(entry); err != nil {
			t.Fatalf("MessageV0: %v", err)
		}
		return Message{v.Offset, v.Magic, v.Attributes, -1, v.Key, v.Value}
	case 1:
		var v kmsg.MessageV1
		if err := v.ReadFrom(entry); err != nil {
			t.Fatalf("MessageV1: %v", err)
		}
		return Message{v.Offset, v.Magic, v.Attributes, v.Timestamp, v.Key, v.Value}
	}
	t.Fatalf("magic %d in a message set", entry[16])
	return Message{}
}

// Set frames messages as a pre-0.11 producer does, sizes and CRCs included.
func Set(msgs ...Message) []byte {
	var out []byte
	for _, m := range msgs {
		var entry []byte
		if m.Magic == 0 {
			entry = (&kmsg.MessageV0{Offset: m.Offset, Attributes: m.Attrs, Key: m.Key, Value: m.Value}).AppendTo(nil)
		} else {
			entry = (&kmsg.MessageV1{Offset: m.Offset, Magic: 1, Attributes: m.Attrs, Timestamp: m.Timestamp, Key: m.Key, Value: m.Value}).AppendTo(nil)
		}
		binary.BigEndian.PutUint32(entry[8:], uint32(len(entry)-12))
		binary.BigEndian.PutUint32(entry[12:], crc32.ChecksumIEEE(entry[16:]))
		out = append(out, entry...)
	}
	return out
}
