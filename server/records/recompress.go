package records

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
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
		batch, rest, err := nextBatch(src)
		if err != nil {
			return dst, err
		}
		if batch == nil {
			return dst, fmt.Errorf("recompress: truncated batch of %d bytes: %w", len(src), ErrCorrupt)
		}
		src = rest
		h := readHeader(batch)
		if err := h.check(batch); err != nil {
			return dst, err
		}
		if h.codec() == codec {
			dst = append(dst, batch...)
			continue
		}
		recs, err := d.payload(&h, batch, maxDecompressed)
		if err != nil {
			return dst, err
		}
		if dst, err = appendRecompressed(dst, batch, recs, h.attrs, codec, level); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

func appendRecompressed(dst, batch, recs []byte, attrs int16, codec Codec, level int) ([]byte, error) {
	start := len(dst)
	dst = append(dst, batch[:headerSize]...)
	dst, err := CompressLevel(codec, level, dst, recs)
	if err != nil {
		return dst[:start], err
	}
	out := dst[start:]
	if len(out)-lengthFieldEnd > math.MaxInt32 {
		return dst[:start], fmt.Errorf("recompressed batch of %d bytes: %w", len(out), ErrTooLarge)
	}
	be := binary.BigEndian
	be.PutUint32(out[offLength:], uint32(len(out)-lengthFieldEnd))
	be.PutUint16(out[offAttributes:], uint16(attrs)&^attrCodecMask|uint16(codec)&attrCodecMask)
	be.PutUint32(out[offCRC:], crc32.Checksum(out[offAttributes:], castagnoli))
	return dst, nil
}

// BatchCodec is the codec of the first batch in src (for tests and tools).
func BatchCodec(src []byte) (Codec, error) {
	if len(src) < headerSize {
		return None, fmt.Errorf("%d bytes: %w", len(src), ErrCorrupt)
	}
	h := readHeader(src)
	return h.codec(), nil
}
