package recordbatch_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"

	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// makeBatch builds a valid batch of records records, each recordBytes of
// dummy bytes, with every timestamp ts, written byte by byte here rather
// than with Header.Put, so the tests check the writer against the layout.
func makeBatch(records, recordBytes int, ts int64) []byte {
	b := make([]byte, recordbatch.HeaderSize+records*recordBytes)
	be := binary.BigEndian
	be.PutUint32(b[8:], uint32(len(b)-12))
	be.PutUint32(b[12:], 0xffffffff) // leader epoch -1
	b[16] = 2
	be.PutUint32(b[23:], uint32(records-1))
	be.PutUint64(b[27:], uint64(ts))
	be.PutUint64(b[35:], uint64(ts))
	be.PutUint64(b[43:], ^uint64(0)) // producerId -1
	be.PutUint16(b[51:], 0xffff)     // producerEpoch -1
	be.PutUint32(b[53:], 0xffffffff) // baseSequence -1
	be.PutUint32(b[57:], uint32(records))
	for i := recordbatch.HeaderSize; i < len(b); i++ {
		b[i] = byte(i)
	}
	be.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

func TestPutReadsBack(t *testing.T) {
	want := makeBatch(3, 10, 1234)
	h, err := recordbatch.Check(want)
	if err != nil {
		t.Fatal(err)
	}
	if h.RecordCount != 3 || h.LastOffset() != 2 || h.Size() != int64(len(want)) || h.ProducerID != -1 || h.LeaderEpoch != -1 {
		t.Fatalf("header %+v", h)
	}
	got := bytes.Clone(want)
	clear(got[:recordbatch.HeaderSize])
	h.Put(got)
	if !bytes.Equal(got, want) {
		t.Fatalf("Put wrote\n%x\nwant\n%x", got[:recordbatch.HeaderSize], want[:recordbatch.HeaderSize])
	}
}

func TestSettersKeepTheCRC(t *testing.T) {
	b := makeBatch(2, 5, 10)
	recordbatch.SetBaseOffset(b, 77)
	recordbatch.SetLeaderEpoch(b, 3)
	recordbatch.SetLogAppendTime(b, 999)
	h, err := recordbatch.Check(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.BaseOffset != 77 || h.LeaderEpoch != 3 || h.MaxTimestamp != 999 || !h.LogAppendTime() || h.BaseTimestamp != 10 {
		t.Fatalf("header %+v", h)
	}
}

func TestParseHeaderRefuses(t *testing.T) {
	for name, mutate := range map[string]func([]byte) []byte{
		"short":           func(b []byte) []byte { return b[:60] },
		"length":          func(b []byte) []byte { binary.BigEndian.PutUint32(b[8:], 48); return b },
		"magic":           func(b []byte) []byte { b[16] = 1; return b },
		"negative delta":  func(b []byte) []byte { binary.BigEndian.PutUint32(b[23:], 0xffffffff); return b },
		"crc":             func(b []byte) []byte { b[70] ^= 1; return b },
		"truncated batch": func(b []byte) []byte { return b[:len(b)-1] },
	} {
		if _, err := recordbatch.Check(mutate(makeBatch(2, 10, 0))); !errors.Is(err, recordbatch.ErrCorrupt) {
			t.Errorf("%s: err = %v, want ErrCorrupt", name, err)
		}
	}
}

func TestNext(t *testing.T) {
	a, b := makeBatch(1, 3, 0), makeBatch(2, 4, 0)
	src := append(bytes.Clone(a), b...)
	one, rest, err := recordbatch.Next(src)
	if err != nil || !bytes.Equal(one, a) || !bytes.Equal(rest, b) {
		t.Fatalf("Next = %d, %d bytes, %v", len(one), len(rest), err)
	}
	if one, _, err := recordbatch.Next(b[:len(b)-1]); one != nil || err != nil {
		t.Fatalf("truncated: %d bytes, %v", len(one), err)
	}
	bad := bytes.Clone(a)
	binary.BigEndian.PutUint32(bad[8:], 3)
	if _, _, err := recordbatch.Next(bad); !errors.Is(err, recordbatch.ErrCorrupt) {
		t.Fatalf("short length: %v", err)
	}
}

func TestValidateCounts(t *testing.T) {
	good := append(makeBatch(1, 3, 0), makeBatch(2, 4, 0)...)
	if n, err := recordbatch.Validate(good); n != 2 || err != nil {
		t.Fatalf("Validate = %d, %v", n, err)
	}
	if n, err := recordbatch.Validate(good[:len(good)-2]); n != 1 || !errors.Is(err, recordbatch.ErrCorrupt) {
		t.Fatalf("Validate of a cut batch = %d, %v", n, err)
	}
}
