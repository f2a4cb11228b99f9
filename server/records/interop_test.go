package records

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kgoCodec maps our codecs to franz-go's client options.
func kgoCodec(c Codec) kgo.CompressionCodec {
	switch c {
	case Gzip:
		return kgo.GzipCompression()
	case Snappy:
		return kgo.SnappyCompression()
	case LZ4:
		return kgo.Lz4Compression()
	case Zstd:
		return kgo.ZstdCompression()
	}
	return kgo.NoCompression()
}

// kmsgRecords encodes recs with kmsg.Record, the way franz-go producers do.
func kmsgRecords(t testing.TB, recs []Record) []byte {
	t.Helper()
	var out []byte
	for i, r := range recs {
		kr := kmsg.Record{
			TimestampDelta64: r.Timestamp - recs[0].Timestamp,
			OffsetDelta:      int32(i),
			Key:              r.Key,
			Value:            r.Value,
		}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
		}
		body := kr.AppendTo(nil)[1:] // encoded with Length 0: one varint byte
		kr.Length = int32(len(body))
		out = kr.AppendTo(out)
	}
	return out
}

// kmsgBatch frames recs as a franz-go client would: kmsg records, compressed
// by franz-go's own compressor, in a kmsg.RecordBatch with Kafka's CRC.
func kmsgBatch(t testing.TB, base int64, recs []Record, codec Codec, attrs int16) []byte {
	t.Helper()
	raw := kmsgRecords(t, recs)
	payload := raw
	if codec != None {
		comp, err := kgo.DefaultCompressor(kgoCodec(codec))
		if err != nil {
			t.Fatal(err)
		}
		var used kgo.CompressionCodecType
		payload, used = comp.Compress(new(bytes.Buffer), raw)
		if int(used) != int(codec) {
			t.Fatalf("franz-go compressed with %d, want %d", used, codec)
		}
		payload = bytes.Clone(payload)
	}
	maxTS := recs[0].Timestamp
	for _, r := range recs {
		maxTS = max(maxTS, r.Timestamp)
	}
	rb := kmsg.RecordBatch{
		FirstOffset:          base,
		Length:               int32(49 + len(payload)),
		PartitionLeaderEpoch: 5,
		Magic:                2,
		Attributes:           attrs | int16(codec),
		LastOffsetDelta:      int32(len(recs) - 1),
		FirstTimestamp:       recs[0].Timestamp,
		MaxTimestamp:         maxTS,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(len(recs)),
		Records:              payload,
	}
	out := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

func TestDecodeFranzGoBatches(t *testing.T) {
	for _, codec := range allCodecs {
		t.Run(codec.String(), func(t *testing.T) {
			want := sampleRecords()
			batch := kmsgBatch(t, 1000, want, codec, 0)
			if err := Decode(batch, 0, 0, func(Record) bool { return true }); err != nil {
				t.Fatalf("Decode: %v", err)
			}
			got := decodeAll(t, batch, 0)
			if len(got) != len(want) {
				t.Fatalf("decoded %d records, want %d", len(got), len(want))
			}
			for i := range want {
				want[i].Offset = 1000 + int64(i)
				checkRecord(t, got[i], want[i])
			}
		})
	}
}

// TestBuilderBatchReadByFranzGo checks the other direction: kmsg parses the
// header and CRC, and franz-go's consumer path decodes every record.
func TestBuilderBatchReadByFranzGo(t *testing.T) {
	for _, codec := range allCodecs {
		t.Run(codec.String(), func(t *testing.T) {
			want := sampleRecords()
			batch := buildBatch(t, want, BatchOptions{Codec: codec})
			var rb kmsg.RecordBatch
			if err := rb.ReadFrom(batch); err != nil {
				t.Fatalf("kmsg ReadFrom: %v", err)
			}
			if crc := int32(crc32.Checksum(batch[21:], crc32.MakeTable(crc32.Castagnoli))); rb.CRC != crc || rb.Magic != 2 {
				t.Fatalf("kmsg sees crc %d magic %d, want crc %d magic 2", rb.CRC, rb.Magic, crc)
			}
			if rb.NumRecords != int32(len(want)) || rb.Attributes != int16(codec) {
				t.Fatalf("kmsg sees %d records attrs %d", rb.NumRecords, rb.Attributes)
			}
			got := fetchWithFranzGo(t, batch)
			if len(got) != len(want) {
				t.Fatalf("franz-go decoded %d records, want %d", len(got), len(want))
			}
			for i, r := range got {
				w := want[i]
				if r.Offset != int64(i) || r.Timestamp.UnixMilli() != w.Timestamp ||
					!sameBytes(r.Key, w.Key) || !sameBytes(r.Value, w.Value) || len(r.Headers) != len(w.Headers) {
					t.Errorf("record %d: franz-go got offset %d ts %d key %q value len %d headers %d",
						i, r.Offset, r.Timestamp.UnixMilli(), r.Key, len(r.Value), len(r.Headers))
				}
			}
		})
	}
}

func fetchWithFranzGo(t *testing.T, batches []byte) []*kgo.Record {
	t.Helper()
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.HighWatermark, rp.LastStableOffset = 1<<40, 1<<40
	rp.RecordBatches = batches
	fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{}, &rp, kgo.DefaultDecompressor(), nil)
	if fp.Err != nil {
		t.Fatalf("franz-go fetch: %v", fp.Err)
	}
	return fp.Records
}

// TestCompressReadByFranzGo: what Compress writes, franz-go's consumer reads.
func TestCompressReadByFranzGo(t *testing.T) {
	src := bytes.Repeat([]byte("ferry record payload "), 5000) // > one xerial and lz4 block
	dec := kgo.DefaultDecompressor()
	for _, codec := range allCodecs[1:] {
		comp, err := Compress(codec, nil, src)
		if err != nil {
			t.Fatal(err)
		}
		out, err := dec.Decompress(comp, kgo.CompressionCodecType(codec))
		if err != nil || !bytes.Equal(out, src) {
			t.Errorf("%v: franz-go decompress: err %v, equal %v", codec, err, bytes.Equal(out, src))
		}
	}
}

// TestPartitionMatchesFranzGo: franz-go's Kafka-compatible key partitioner
// and PartitionForKey agree for many keys and partition counts.
func TestPartitionMatchesFranzGo(t *testing.T) {
	tp := kgo.StickyKeyPartitioner(nil).ForTopic("t")
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		key := make([]byte, rng.IntN(41)) // every tail length, several words
		for j := range key {
			key[j] = byte(rng.Uint32())
		}
		n := int32(rng.IntN(200) + 1)
		want := tp.Partition(&kgo.Record{Key: key}, int(n))
		if got := PartitionForKey(key, n); int(got) != want {
			t.Fatalf("key %x, %d partitions: PartitionForKey %d, franz-go %d", key, n, got, want)
		}
	}
	for _, s := range []string{"", "a", "ab", "abc", "abcd", "abcde", "user-42", "日本語キー"} {
		want := tp.Partition(&kgo.Record{Key: []byte(s)}, 12)
		if got := PartitionForKey([]byte(s), 12); int(got) != want {
			t.Errorf("key %q: PartitionForKey %d, franz-go %d", s, got, want)
		}
	}
}
