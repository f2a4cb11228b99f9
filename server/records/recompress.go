package records

import (
	"fmt"
	"math"

	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// Recompress appends to dst the batches of src, each stored with codec
// (at level, see CompressLevel):
// a batch already in codec is copied, any other has its records
// decompressed (under maxDecompressed per batch) and compressed again.
// Only the payload, the codec bits, the length and the CRC change: offsets,
// timestamps, producer id, epoch and sequence numbers stay as they were, so
// idempotent producers see the same batch. This is what a topic's
// compression.type other than producer asks of the broker.
func Recompress(dst, src []byte, codec Codec, level, maxDecompressed int) ([]byte, error) {
	d := getDecoder()
	defer putDecoder(d)
	for len(src) > 0 {
		batch, rest, err := recordbatch.Next(src)
		if err != nil {
			return dst, err
		}
		if batch == nil {
			return dst, fmt.Errorf("recompress: truncated batch of %d bytes: %w", len(src), ErrCorrupt)
		}
		src = rest
		h := recordbatch.ReadHeader(batch)
		if err := check(&h, batch); err != nil {
			return dst, err
		}
		if codecOf(&h) == codec {
			dst = append(dst, batch...)
			continue
		}
		recs, err := d.payload(&h, batch, maxDecompressed)
		if err != nil {
			return dst, err
		}
		if dst, err = appendRecompressed(dst, batch, h, recs, codec, level); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

func appendRecompressed(dst, batch []byte, h recordbatch.Header, recs []byte, codec Codec, level int) ([]byte, error) {
	start := len(dst)
	dst = append(dst, batch[:recordbatch.HeaderSize]...)
	dst, err := CompressLevel(codec, level, dst, recs)
	if err != nil {
		return dst[:start], err
	}
	out := dst[start:]
	if len(out)-recordbatch.LogOverhead > math.MaxInt32 {
		return dst[:start], fmt.Errorf("recompressed batch of %d bytes: %w", len(out), ErrTooLarge)
	}
	h.Attributes = h.Attributes&^recordbatch.CodecMask | int16(codec)&recordbatch.CodecMask
	h.Put(out) // the new length, codec and CRC; every other field as it was
	return dst, nil
}

// BatchCodec is the codec of the first batch in src (for tests and tools).
func BatchCodec(src []byte) (Codec, error) {
	if len(src) < recordbatch.HeaderSize {
		return None, fmt.Errorf("%d bytes: %w", len(src), ErrCorrupt)
	}
	h := recordbatch.ReadHeader(src)
	return codecOf(&h), nil
}
