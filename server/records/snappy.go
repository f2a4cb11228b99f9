package records

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/klauspost/compress/s2"
)

// The Java client frames snappy the xerial way: an 8-byte magic, a version
// and a minimum compatible version (both 1), then blocks, each a big-endian
// int32 length and a raw snappy block. Other clients (librdkafka, sarama,
// older franz-go) send one raw snappy block. Decompress accepts both.
var (
	xerialMagic  = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}
	xerialHeader = append(slices.Clip(xerialMagic), 0, 0, 0, 1, 0, 0, 0, 1)
)

// xerialBlockSize is the block size the Java client writes.
const xerialBlockSize = 32 << 10

// appendXerial appends src as xerial-framed snappy, which every Kafka client
// reads, because the Java reader only falls back to raw snappy by guessing.
func appendXerial(dst, src []byte) []byte {
	dst = append(dst, xerialHeader...)
	for len(src) > 0 {
		n := min(len(src), xerialBlockSize)
		dst = slices.Grow(dst, 4+s2.MaxEncodedLen(n))
		at := len(dst)
		// EncodeSnappy encodes into the spare capacity, leaving room for the length.
		block := s2.EncodeSnappy(dst[at+4:cap(dst)], src[:n])
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(block)))
		dst = dst[:at+4+len(block)]
		src = src[n:]
	}
	return dst
}

func decompressSnappy(dst, src []byte, max int) ([]byte, error) {
	if len(src) >= len(xerialHeader) && bytes.HasPrefix(src, xerialMagic) {
		return decompressXerial(dst, src[len(xerialHeader):], max)
	}
	return decodeSnappyBlock(dst, src, max)
}

// decodeSnappyBlock appends one raw snappy block, whose header claims its
// decoded length: the claim is checked against max before anything is sized
// by it.
func decodeSnappyBlock(dst, block []byte, max int) ([]byte, error) {
	n, err := s2.DecodedLen(block)
	if err != nil {
		return dst, corrupt(err)
	}
	if n > max {
		return dst, fmt.Errorf("block of %d bytes, more than %d: %w", n, max, ErrTooLarge)
	}
	dst = slices.Grow(dst, n)
	// Decode writes in place when given exactly the room it needs.
	if _, err := s2.Decode(dst[len(dst):len(dst)+n], block); err != nil {
		return dst, corrupt(err)
	}
	return dst[:len(dst)+n], nil
}

func decompressXerial(dst, blocks []byte, max int) ([]byte, error) {
	start := len(dst)
	for len(blocks) > 0 {
		if len(blocks) < 4 {
			return dst, fmt.Errorf("xerial block length: %w", ErrCorrupt)
		}
		size := binary.BigEndian.Uint32(blocks)
		blocks = blocks[4:]
		if uint64(size) > uint64(len(blocks)) {
			return dst, fmt.Errorf("xerial block of %d bytes, %d left: %w", size, len(blocks), ErrCorrupt)
		}
		var err error
		if dst, err = decodeSnappyBlock(dst, blocks[:size], max-(len(dst)-start)); err != nil {
			return dst, err
		}
		blocks = blocks[size:]
	}
	return dst, nil
}
