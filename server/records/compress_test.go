package records

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

func TestCompressRoundTrip(t *testing.T) {
	inputs := [][]byte{{}, []byte("x"), bytes.Repeat([]byte("0123456789abcdef"), 20000)}
	for _, codec := range allCodecs {
		for _, src := range inputs {
			comp, err := Compress(codec, []byte("pre"), src)
			if err != nil || string(comp[:3]) != "pre" {
				t.Fatalf("%v: Compress: %v", codec, err)
			}
			out, err := Decompress(codec, []byte("dst"), comp[3:], len(src))
			if err != nil || string(out[:3]) != "dst" || !bytes.Equal(out[3:], src) {
				t.Fatalf("%v, %d bytes: Decompress: err %v, equal %v", codec, len(src), err, bytes.Equal(out[3:], src))
			}
			if len(src) > 1 { // a cap of 0 means the default
				if _, err := Decompress(codec, nil, comp[3:], len(src)-1); !errors.Is(err, ErrTooLarge) {
					t.Errorf("%v, %d bytes under a cap one short: err = %v, want ErrTooLarge", codec, len(src), err)
				}
			}
		}
	}
}

// TestSnappyFramings: the Java client sends xerial frames of 32 KiB blocks;
// librdkafka and sarama send one raw block. Both must decode.
func TestSnappyFramings(t *testing.T) {
	src := bytes.Repeat([]byte("snappy framing test "), 5000) // 100 KB: four xerial blocks
	raw := s2.EncodeSnappy(nil, src)
	xerial := append([]byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1}, nil...)
	for rest := src; len(rest) > 0; {
		n := min(len(rest), 32<<10)
		block := s2.EncodeSnappy(nil, rest[:n])
		xerial = binary.BigEndian.AppendUint32(xerial, uint32(len(block)))
		xerial = append(xerial, block...)
		rest = rest[n:]
	}
	for name, comp := range map[string][]byte{"raw": raw, "xerial": xerial, "ours": appendXerial(nil, src)} {
		out, err := Decompress(Snappy, nil, comp, 0)
		if err != nil || !bytes.Equal(out, src) {
			t.Errorf("%s: err %v, equal %v", name, err, bytes.Equal(out, src))
		}
	}
	for cut := 17; cut < 40; cut++ {
		if _, err := Decompress(Snappy, nil, xerial[:cut], 0); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("xerial cut at %d: err = %v, want ErrCorrupt", cut, err)
		}
	}
}

// zeros streams n zero bytes through a stream compressor without holding
// them, to build bombs: tiny inputs that expand enormously.
func zeros(t *testing.T, n int64, w io.WriteCloser) {
	t.Helper()
	if _, err := io.Copy(w, io.LimitReader(zeroReader{}, n)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestDecompressionBombs: payloads of a few KB that expand to 64 MiB fail
// with ErrTooLarge under a 1 MiB cap, allocating a few MiB at most.
func TestDecompressionBombs(t *testing.T) {
	const size, limit = 64 << 20, 1 << 20
	bombs := map[Codec]*bytes.Buffer{Gzip: {}, LZ4: {}, Zstd: {}}
	gz, _ := gzip.NewWriterLevel(bombs[Gzip], gzip.BestCompression)
	zeros(t, size, gz)
	zeros(t, size, lz4.NewWriter(bombs[LZ4]))
	zw, _ := zstd.NewWriter(bombs[Zstd])
	zeros(t, size, zw)
	snappyClaim := append(binary.AppendUvarint(nil, size), 0, 0, 0, 0)  // raw block claiming 64 MiB
	zstdDeclared := zstdEncoderAt(0).EncodeAll(make([]byte, size), nil) // frame declaring its size
	cases := map[string]struct {
		codec Codec
		data  []byte
	}{
		"gzip":           {Gzip, bombs[Gzip].Bytes()},
		"lz4":            {LZ4, bombs[LZ4].Bytes()},
		"zstd stream":    {Zstd, bombs[Zstd].Bytes()},
		"zstd declared":  {Zstd, zstdDeclared},
		"snappy claimed": {Snappy, snappyClaim},
		"xerial":         {Snappy, appendXerial(nil, make([]byte, 2*limit))},
	}
	for name, c := range cases {
		allocated := allocatedBy(func() {
			if _, err := Decompress(c.codec, nil, c.data, limit); !errors.Is(err, ErrTooLarge) {
				t.Errorf("%s (%d bytes): err = %v, want ErrTooLarge", name, len(c.data), err)
			}
		})
		// lz4 frames may use 4 MiB blocks, so its reader holds a few
		// block buffers whatever the cap: a constant, not the 64 MiB.
		if allocated > 2*limit+10<<20 {
			t.Errorf("%s: allocated %d bytes under a %d byte cap", name, allocated, limit)
		}
	}
	var b Builder
	b.Add(Record{Value: make([]byte, 2*limit)})
	batch, _ := b.AppendBatch(nil, BatchOptions{Codec: Zstd})
	if err := Decode(batch, 0, limit, func(Record) bool { return true }); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Decode of a batch over the cap: err = %v, want ErrTooLarge", err)
	}
	if err := Validate(batch, limit); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Validate of a batch over the cap: err = %v, want ErrTooLarge", err)
	}
}

func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestDecompressRejectsGarbage(t *testing.T) {
	junk := []byte("this is not a compressed stream at all")
	for _, codec := range allCodecs[1:] {
		if _, err := Decompress(codec, nil, junk, 0); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%v: err = %v, want ErrCorrupt", codec, err)
		}
	}
	if _, err := Decompress(7, nil, junk, 0); !errors.Is(err, ErrUnsupportedCodec) {
		t.Errorf("codec 7: err = %v, want ErrUnsupportedCodec", err)
	}
}

// TestLZ4FrameLikeJava: 64 KiB blocks (descriptor byte 0x40), as the Java
// client writes, so Java readers never need a 4 MiB block buffer.
func TestLZ4FrameLikeJava(t *testing.T) {
	out, err := Compress(LZ4, nil, []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	if magic := binary.LittleEndian.Uint32(out); magic != 0x184D2204 || out[5] != 0x40 {
		t.Fatalf("frame starts % x, want LZ4 magic and block descriptor 0x40", out[:6])
	}
}
