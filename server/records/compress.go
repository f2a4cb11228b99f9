package records

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Compress appends src compressed with codec to dst, in the framing Kafka
// clients expect: gzip streams, xerial-framed snappy (what the Java client
// writes), LZ4 frames, zstd frames. None appends src unchanged.
func Compress(codec Codec, dst, src []byte) ([]byte, error) {
	return CompressLevel(codec, 0, dst, src)
}

// CompressLevel is Compress at a level in Kafka's numbering for the codec
// (compression.gzip.level 1..9, compression.lz4.level 1..17,
// compression.zstd.level -131072..22); 0 (or gzip's -1) is the codec's
// default. Levels the libraries lack map to the nearest they have.
func CompressLevel(codec Codec, level int, dst, src []byte) ([]byte, error) {
	var err error
	switch codec {
	case None:
		return append(dst, src...), nil
	case Gzip:
		dst, err = compressGzip(dst, src, level)
	case Snappy:
		return appendXerial(dst, src), nil
	case LZ4:
		dst, err = compressLZ4(dst, src, level)
	case Zstd:
		return zstdEncoderAt(level).EncodeAll(src, dst), nil
	default:
		return dst, fmt.Errorf("compress with %v: %w", codec, ErrUnsupportedCodec)
	}
	if err != nil {
		return dst, fmt.Errorf("compress with %v: %w", codec, err)
	}
	return dst, nil
}

// Decompress appends src decompressed with codec to dst. More than max
// decompressed bytes (<= 0 means DefaultMaxDecompressed; at most 2 GiB) fail with
// ErrTooLarge, after decoding at most about max bytes, so a small bomb costs
// little. Snappy accepts both raw blocks and xerial framing; a malformed
// stream fails with ErrCorrupt.
func Decompress(codec Codec, dst, src []byte, max int) ([]byte, error) {
	if max <= 0 {
		max = DefaultMaxDecompressed
	}
	max = min(max, math.MaxInt32) // records are framed by int32 lengths anyway
	start := len(dst)
	var err error
	switch codec {
	case None:
		if len(src) > max {
			return dst, fmt.Errorf("%d bytes: %w", len(src), ErrTooLarge)
		}
		return append(dst, src...), nil
	case Gzip:
		dst, err = decompressGzip(dst, src, max)
	case Snappy:
		dst, err = decompressSnappy(dst, src, max)
	case LZ4:
		dst, err = decompressLZ4(dst, src, max)
	case Zstd:
		dst, err = decompressZstd(dst, src, max)
	default:
		return dst, fmt.Errorf("decompress with %v: %w", codec, ErrUnsupportedCodec)
	}
	if err != nil {
		return dst[:start], fmt.Errorf("decompress %d bytes with %v: %w", len(src), codec, err)
	}
	return dst, nil
}

// corrupt tags a codec library's error as ErrCorrupt unless it already is
// one of ours.
func corrupt(err error) error {
	if errors.Is(err, ErrTooLarge) || errors.Is(err, ErrCorrupt) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrCorrupt, err)
}

// appendWriter is an io.Writer appending to b, so stream encoders write
// straight into the caller's dst.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// readAll appends everything r yields to dst, failing once more than max
// bytes have come out; it reads max+1 at most.
func readAll(dst []byte, r io.Reader, max int, sizeHint int) ([]byte, error) {
	lim := io.LimitedReader{R: r, N: int64(max) + 1}
	start := len(dst)
	dst = slices.Grow(dst, min(sizeHint, max+1))
	for {
		if len(dst) == cap(dst) {
			dst = slices.Grow(dst, min(cap(dst)-start+512, max+1-(len(dst)-start)))
		}
		n, err := lim.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if len(dst)-start > max {
			return dst, fmt.Errorf("more than %d bytes: %w", max, ErrTooLarge)
		}
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, corrupt(err)
		}
	}
}

// gzipCodec pools a gzip reader and writer with their byte adapters, so a
// batch allocates none of them.
type gzipCodec struct {
	r   gzip.Reader
	src bytes.Reader
	w   *gzip.Writer
	out appendWriter
}

var gzipPool = sync.Pool{New: func() any {
	return &gzipCodec{w: gzip.NewWriter(nil)}
}}

// gzipLevelPools hold writers for explicit levels 1..9.
var gzipLevelPools [gzip.BestCompression + 1]sync.Pool

func gzipCodecAt(level int) (*gzipCodec, *sync.Pool) {
	if level < gzip.BestSpeed || level > gzip.BestCompression {
		return gzipPool.Get().(*gzipCodec), &gzipPool
	}
	pool := &gzipLevelPools[level]
	if c, ok := pool.Get().(*gzipCodec); ok {
		return c, pool
	}
	w, _ := gzip.NewWriterLevel(nil, level) // level is in range
	return &gzipCodec{w: w}, pool
}

func compressGzip(dst, src []byte, level int) ([]byte, error) {
	c, pool := gzipCodecAt(level)
	defer pool.Put(c)
	c.out.b = dst
	c.w.Reset(&c.out)
	_, err := c.w.Write(src)
	if err == nil {
		err = c.w.Close()
	}
	dst, c.out.b = c.out.b, nil
	return dst, err
}

func decompressGzip(dst, src []byte, max int) ([]byte, error) {
	c := gzipPool.Get().(*gzipCodec)
	defer gzipPool.Put(c)
	c.src.Reset(src)
	if err := c.r.Reset(&c.src); err != nil {
		return dst, corrupt(err)
	}
	dst, err := readAll(dst, &c.r, max, 4*len(src))
	c.src.Reset(nil)
	return dst, err
}

// lz4Codec pools an LZ4 frame reader and writer. Writers use 64 KiB blocks,
// as the Java client does, which also bounds what a reader allocates.
type lz4Codec struct {
	r   *lz4.Reader
	src bytes.Reader
	w   *lz4.Writer
	out appendWriter
}

var lz4Pool = sync.Pool{New: func() any {
	return &lz4Codec{r: lz4.NewReader(nil), w: lz4.NewWriter(nil)}
}}

// lz4Level maps Kafka's lz4 levels (1..17, HC from 3) to the library's.
func lz4Level(level int) lz4.CompressionLevel {
	switch {
	case level <= 0:
		return lz4.Fast
	case level >= 9:
		return lz4.Level9
	}
	return lz4.CompressionLevel(1 << (8 + level))
}

func compressLZ4(dst, src []byte, level int) ([]byte, error) {
	c := lz4Pool.Get().(*lz4Codec)
	defer lz4Pool.Put(c)
	c.out.b = dst
	c.w.Reset(&c.out)
	err := c.w.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.CompressionLevelOption(lz4Level(level)))
	if err == nil {
		_, err = c.w.Write(src)
	}
	if err == nil {
		err = c.w.Close()
	}
	dst, c.out.b = c.out.b, nil
	return dst, err
}

func decompressLZ4(dst, src []byte, max int) ([]byte, error) {
	c := lz4Pool.Get().(*lz4Codec)
	defer lz4Pool.Put(c)
	c.src.Reset(src)
	c.r.Reset(&c.src)
	dst, err := readAll(dst, c.r, max, 4*len(src))
	c.src.Reset(nil)
	return dst, err
}

// zstdEncoders are shared, one per library level: EncodeAll is safe for
// concurrent use and keeps its own per-goroutine state.
var zstdEncoders [zstd.SpeedBestCompression + 1]struct {
	once sync.Once
	enc  *zstd.Encoder
}

// zstdEncoderAt returns the encoder for a Kafka zstd level (0: default).
func zstdEncoderAt(level int) *zstd.Encoder {
	l := zstd.SpeedDefault
	if level != 0 {
		l = zstd.EncoderLevelFromZstd(level)
	}
	e := &zstdEncoders[l]
	e.once.Do(func() {
		enc, err := zstd.NewWriter(nil, zstd.WithZeroFrames(true), zstd.WithEncoderLevel(l))
		if err != nil {
			panic(fmt.Sprintf("records: zstd encoder with static options: %v", err))
		}
		e.enc = enc
	})
	return e.enc
}

// zstdWindowFloor is the smallest window a zstd frame may always use. The
// decoder needs a window-sized buffer, so the window is bounded too, by the
// larger of the caller's cap and this floor: frames the Java client streams
// declare no size but a window of up to 8 MiB (zstd levels up to 19), and a
// small cap must not refuse a valid ten-byte batch.
const zstdWindowFloor = 8 << 20

// zstdDecoder is a pooled stream decoder with the reader it reads from.
// Streaming, unlike DecodeAll, lets readAll stop the output at the cap and
// grow it geometrically: DecodeAll stops only at the decoder's bound and
// grows its output 1.25x a block at a time, which for a bomb meant ~6x the
// bound in garbage. Concurrency 1 keeps decoding on the caller's goroutine;
// WithDecodeBuffersBelow(0) turns off the shortcut that would DecodeAll
// small inputs. Each decoder remembers its window bound so the option
// changes only when a caller's cap does.
type zstdDecoder struct {
	d      *zstd.Decoder
	src    bytes.Reader
	window int
}

var zstdPool = sync.Pool{New: func() any {
	d, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderLowmem(true),
		zstd.WithDecodeBuffersBelow(0),
	)
	if err != nil {
		panic(fmt.Sprintf("records: zstd decoder with static options: %v", err))
	}
	return &zstdDecoder{d: d}
}}

func decompressZstd(dst, src []byte, limit int) ([]byte, error) {
	z := zstdPool.Get().(*zstdDecoder)
	defer zstdPool.Put(z)
	z.src.Reset(src)
	defer z.src.Reset(nil)
	if err := z.reset(max(limit, zstdWindowFloor)); err != nil {
		return dst, corrupt(err)
	}
	dst, err := readAll(dst, z.d, limit, 4*len(src))
	if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) {
		return dst, fmt.Errorf("window over %d bytes: %w: %w", max(limit, zstdWindowFloor), ErrTooLarge, err)
	}
	return dst, err
}

// reset points the decoder at z.src with window bound w; for streams the
// max-memory option bounds the window.
func (z *zstdDecoder) reset(w int) error {
	if z.window == w {
		return z.d.Reset(&z.src)
	}
	z.window = w
	return z.d.ResetWithOptions(&z.src, zstd.WithDecoderMaxMemory(uint64(w)))
}
