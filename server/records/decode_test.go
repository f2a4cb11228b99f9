package records

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// fixCRC recomputes the CRC of the single batch b after a test edits it.
func fixCRC(b []byte) []byte {
	binary.BigEndian.PutUint32(b[offCRC:], recordbatch.Checksum(b[offAttributes:]))
	return b
}

func offsets(recs []Record) []int64 {
	var out []int64
	for _, r := range recs {
		out = append(out, r.Offset)
	}
	return out
}

func twoBatches(t *testing.T) []byte {
	recs := sampleRecords()
	return append(kmsgBatch(t, 0, recs, Gzip, 0), kmsgBatch(t, 5, recs, Zstd, 0)...)
}

func TestDecodeMinOffset(t *testing.T) {
	batches := twoBatches(t)
	for _, c := range []struct {
		min  int64
		want []int64
	}{
		{0, []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{3, []int64{3, 4, 5, 6, 7, 8, 9}},
		{7, []int64{7, 8, 9}},
		{10, nil},
	} {
		if got := offsets(decodeAll(t, batches, c.min)); !slices.Equal(got, c.want) {
			t.Errorf("minOffset %d: offsets %v, want %v", c.min, got, c.want)
		}
	}
}

func TestDecodeSkipsControlBatches(t *testing.T) {
	recs := sampleRecords()
	control := kmsgBatch(t, 5, recs[:1], None, attrControl|attrTransactional)
	batches := slices.Concat(kmsgBatch(t, 0, recs, None, 0), control, kmsgBatch(t, 6, recs, None, 0))
	got := offsets(decodeAll(t, batches, 0))
	want := []int64{0, 1, 2, 3, 4, 6, 7, 8, 9, 10}
	if !slices.Equal(got, want) {
		t.Fatalf("offsets %v, want %v", got, want)
	}
}

func TestDecodeLogAppendTime(t *testing.T) {
	recs := sampleRecords()
	batch := kmsgBatch(t, 0, recs, Snappy, attrLogAppendTime)
	binary.BigEndian.PutUint64(batch[offMaxTime:], 1800000000000) // what the broker stamped
	for _, r := range decodeAll(t, fixCRC(batch), 0) {
		if r.Timestamp != 1800000000000 || r.TimestampType != 1 {
			t.Fatalf("offset %d: timestamp %d type %d, want the batch's LogAppendTime", r.Offset, r.Timestamp, r.TimestampType)
		}
	}
}

// TestDecodeTruncatedFinalBatch: a fetch may end anywhere inside its last
// batch; the complete batches before it decode and the walk ends quietly.
func TestDecodeTruncatedFinalBatch(t *testing.T) {
	batches := twoBatches(t)
	first, _, _ := recordbatch.Next(batches)
	for cut := len(first); cut < len(batches); cut++ {
		var n int
		err := Decode(batches[:cut], 0, 0, func(Record) bool { n++; return true })
		if err != nil || n != 5 {
			t.Fatalf("cut at %d: %d records, err %v; want 5, nil", cut, n, err)
		}
	}
}

func TestDecodeStopsWhenFnSaysSo(t *testing.T) {
	var n int
	err := Decode(twoBatches(t), 0, 0, func(Record) bool { n++; return n < 7 })
	if err != nil || n != 7 {
		t.Fatalf("%d calls, err %v; want 7, nil", n, err)
	}
}

func TestDecodeRejectsCorruptBatches(t *testing.T) {
	good := func() []byte { return buildBatch(t, sampleRecords(), BatchOptions{}) }
	cases := []struct {
		name string
		edit func(b []byte) []byte
		want error
	}{
		{"flipped record byte", func(b []byte) []byte { b[len(b)-3] ^= 1; return b }, ErrCorrupt},
		{"magic 1", func(b []byte) []byte { b[offMagic] = 1; return b }, ErrCorrupt},
		{"short batch length", func(b []byte) []byte { binary.BigEndian.PutUint32(b[offLength:], 48); return b }, ErrCorrupt},
		{"codec 6", func(b []byte) []byte { b[offAttributes+1] = 6; return fixCRC(b) }, ErrUnsupportedCodec},
		{"negative count", setCount(math.MaxUint32), ErrCorrupt},
		{"huge count", setCount(math.MaxInt32), ErrCorrupt},
		{"count too small", setCount(2), ErrCorrupt},
		{"gzip codec on plain records", func(b []byte) []byte { b[offAttributes+1] = byte(Gzip); return fixCRC(b) }, ErrCorrupt},
	}
	for _, c := range cases {
		err := Decode(c.edit(good()), 0, 0, func(Record) bool { return true })
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
	}
}

// setCount returns an edit that claims n records, with a matching CRC.
func setCount(n uint32) func([]byte) []byte {
	return func(b []byte) []byte {
		binary.BigEndian.PutUint32(b[offRecordCount:], n)
		return fixCRC(b)
	}
}

// recordBatch frames already encoded records by hand, so tests can send
// records no encoder would write.
func recordBatch(count, lastDelta int32, records []byte) []byte {
	b := make([]byte, headerSize, headerSize+len(records))
	b = append(b, records...)
	be := binary.BigEndian
	be.PutUint32(b[offLength:], uint32(len(b)-lengthFieldEnd))
	b[offMagic] = magicV2
	be.PutUint32(b[offLastDelta:], uint32(lastDelta))
	be.PutUint64(b[offProducerID:], math.MaxUint64)
	be.PutUint32(b[offBaseSequence:], math.MaxUint32)
	be.PutUint32(b[offRecordCount:], uint32(count))
	return fixCRC(b)
}

// rawRecord encodes a record body from its parts, then prefixes its length.
func rawRecord(offsetDelta int64, rest ...int64) []byte {
	body := []byte{0}
	body = binary.AppendVarint(body, 0) // timestamp delta
	body = binary.AppendVarint(body, offsetDelta)
	for _, v := range rest {
		body = binary.AppendVarint(body, v)
	}
	return append(binary.AppendVarint(nil, int64(len(body))), body...)
}

func TestDecodeRejectsBadRecords(t *testing.T) {
	cases := map[string][]byte{
		// key -1, value -1, then a header count no record could hold.
		"header count 2^30": rawRecord(0, -1, -1, 1<<30),
		"null header key":   rawRecord(0, -1, -1, 1, -1, -1),
		"key past the end":  rawRecord(0, 100, -1, 0),
		"negative key len":  rawRecord(0, -2, -1, 0),
		"trailing byte":     append(rawRecord(0, -1, -1, 0)[:0:0], 7, 0, 0, 0, 1, 1, 0, 9),
		"record length big": {40, 0, 0, 0, 1, 1, 0},
	}
	for name, rec := range cases {
		err := Decode(recordBatch(1, 0, rec), 0, 0, func(Record) bool { return true })
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: err = %v, want ErrCorrupt", name, err)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, codec := range allCodecs {
		if err := Validate(kmsgBatch(t, 0, sampleRecords(), codec, 0), 0); err != nil {
			t.Errorf("franz-go %v batch: %v", codec, err)
		}
	}
	good := func() []byte { return buildBatch(t, sampleRecords(), BatchOptions{Codec: LZ4}) }
	swapped := slices.Concat(rawRecord(1, -1, -1, 0), rawRecord(0, -1, -1, 0))
	cases := []struct {
		name  string
		batch []byte
		want  error
	}{
		{"control batch", kmsgBatch(t, 0, sampleRecords(), None, attrControl), ErrInvalid},
		{"base offset 5", kmsgBatch(t, 5, sampleRecords(), None, 0), ErrInvalid},
		{"two batches", append(good(), good()...), ErrInvalid},
		{"truncated", good()[:100], ErrCorrupt},
		{"count != lastOffsetDelta+1", recordBatch(2, 0, swapped), ErrInvalid},
		{"zero records", recordBatch(0, -1, nil), ErrInvalid},
		{"offset deltas out of order", recordBatch(2, 1, swapped), ErrInvalid},
		{"bytes after the records", recordBatch(1, 0, append(rawRecord(0, -1, -1, 0), 0)), ErrCorrupt},
		{"bad CRC", func() []byte { b := good(); b[30] ^= 0xff; return b }(), ErrCorrupt},
		{"producer id without sequence", func() []byte {
			b := good()
			binary.BigEndian.PutUint64(b[offProducerID:], 9)
			return fixCRC(b)
		}(), ErrInvalid},
	}
	for _, c := range cases {
		if err := Validate(c.batch, 0); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
	}
}

// TestDecodeHugeCountAllocatesNothing: a header claiming 2^31-1 records in a
// small batch must fail on the data, not size anything by the claim.
func TestDecodeHugeCountAllocatesNothing(t *testing.T) {
	batch := recordBatch(math.MaxInt32, math.MaxInt32-1, rawRecord(0, -1, -1, 0))
	allocated := allocatedBy(func() {
		if err := Decode(batch, 0, 0, func(Record) bool { return true }); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Decode: err = %v, want ErrCorrupt", err)
		}
		if err := Validate(batch, 0); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Validate: err = %v, want ErrCorrupt", err)
		}
	})
	if allocated > 64<<10 {
		t.Fatalf("allocated %d bytes for a %d byte batch", allocated, len(batch))
	}
}
