package records

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	for _, codec := range allCodecs {
		t.Run(codec.String(), func(t *testing.T) {
			want := sampleRecords()
			batch := buildBatch(t, want, BatchOptions{Codec: codec})
			if err := Validate(batch, 0); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			got := decodeAll(t, batch, 0)
			if len(got) != len(want) {
				t.Fatalf("decoded %d records, want %d", len(got), len(want))
			}
			for i := range want {
				want[i].Offset = int64(i)
				checkRecord(t, got[i], want[i])
			}
		})
	}
}

func TestBatchHeader(t *testing.T) {
	recs := sampleRecords()
	batch := buildBatch(t, recs, BatchOptions{Codec: Zstd})
	be := binary.BigEndian
	checks := []struct {
		name      string
		got, want int64
	}{
		{"baseOffset", int64(be.Uint64(batch[0:])), 0},
		{"batchLength", int64(be.Uint32(batch[8:])), int64(len(batch) - 12)},
		{"leaderEpoch", int64(int32(be.Uint32(batch[12:]))), -1},
		{"magic", int64(batch[16]), 2},
		{"attributes", int64(be.Uint16(batch[21:])), int64(Zstd)},
		{"lastOffsetDelta", int64(be.Uint32(batch[23:])), int64(len(recs) - 1)},
		{"baseTimestamp", int64(be.Uint64(batch[27:])), recs[0].Timestamp},
		{"maxTimestamp", int64(be.Uint64(batch[35:])), 1700000000005},
		{"producerId", int64(be.Uint64(batch[43:])), -1},
		{"producerEpoch", int64(int16(be.Uint16(batch[51:]))), -1},
		{"baseSequence", int64(int32(be.Uint32(batch[53:]))), -1},
		{"recordCount", int64(be.Uint32(batch[57:])), int64(len(recs))},
		{"crc", int64(be.Uint32(batch[17:])), int64(crc32.Checksum(batch[21:], crc32.MakeTable(crc32.Castagnoli)))},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
}

func TestProducerFields(t *testing.T) {
	batch := buildBatch(t, sampleRecords(), BatchOptions{ProducerID: 7, ProducerEpoch: 3, BaseSequence: 42})
	be := binary.BigEndian
	if pid, ep, seq := int64(be.Uint64(batch[43:])), int16(be.Uint16(batch[51:])), int32(be.Uint32(batch[53:])); pid != 7 || ep != 3 || seq != 42 {
		t.Fatalf("producer fields = %d/%d/%d, want 7/3/42", pid, ep, seq)
	}
	if err := Validate(batch, 0); err != nil {
		t.Fatalf("Validate: %v", err)
	}
}

func TestBuilderReuseAndErrors(t *testing.T) {
	var b Builder
	if _, err := b.AppendBatch(nil, BatchOptions{}); err == nil {
		t.Fatal("empty builder built a batch")
	}
	b.Add(Record{Value: []byte("x")})
	if _, err := b.AppendBatch(nil, BatchOptions{Codec: 5}); !errors.Is(err, ErrUnsupportedCodec) {
		t.Fatalf("codec 5: err = %v, want ErrUnsupportedCodec", err)
	}
	b.Reset()
	if b.Len() != 0 {
		t.Fatalf("Len after Reset = %d", b.Len())
	}
	b.Add(Record{Value: []byte("second"), Timestamp: 9})
	got := decodeAll(t, buildFrom(t, &b), 0)
	if len(got) != 1 || string(got[0].Value) != "second" || got[0].Timestamp != 9 {
		t.Fatalf("after Reset decoded %+v", got)
	}
}

func buildFrom(t *testing.T, b *Builder) []byte {
	t.Helper()
	out, err := b.AppendBatch([]byte("prefix"), BatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(out[:6]) != "prefix" {
		t.Fatal("AppendBatch clobbered dst")
	}
	return out[6:]
}

// TestBuildAllocs proves the HTTP produce path allocates per batch, not per
// record: a reused Builder and dst encode ten records with no allocation.
func TestBuildAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under the race detector")
	}
	recs := benchRecords(10, 100)
	var b Builder
	var dst []byte
	for _, codec := range allCodecs {
		build := func() {
			b.Reset()
			for _, r := range recs {
				b.Add(r)
			}
			var err error
			if dst, err = b.AppendBatch(dst[:0], BatchOptions{Codec: codec}); err != nil {
				t.Fatal(err)
			}
		}
		build() // warm buffers and pools
		if n := testing.AllocsPerRun(100, build); n > 2 {
			t.Errorf("%v: %.1f allocations per 10-record batch, want <= 2", codec, n)
		}
	}
}

// An uncompressed batch built into a new slice (as the core builds the
// gateway's batches) costs one allocation: header and records together.
func TestUncompressedBatchIntoNilAllocatesOnce(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's instrumentation allocates")
	}
	var b Builder
	for _, r := range benchRecords(10, 100) {
		b.Add(r)
	}
	n := testing.AllocsPerRun(100, func() {
		if _, err := b.AppendBatch(nil, BatchOptions{Codec: None}); err != nil {
			t.Fatal(err)
		}
	})
	if n != 1 {
		t.Errorf("%.1f allocations, want 1", n)
	}
}

func TestDecodeAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under the race detector")
	}
	var batch []byte
	for _, codec := range []Codec{None, Snappy, Zstd} {
		batch = append(batch[:0], buildBatch(t, benchRecords(10, 100), BatchOptions{Codec: codec})...)
		n := testing.AllocsPerRun(100, func() {
			if err := Decode(batch, 0, 0, func(Record) bool { return true }); err != nil {
				t.Fatal(err)
			}
		})
		if n > 2 {
			t.Errorf("%v: %.1f allocations per 10-record decode, want <= 2", codec, n)
		}
	}
}
