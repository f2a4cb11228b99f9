package idempotency

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
)

// Fingerprint identifies a request: the same key with another fingerprint
// is a different request reusing the key (refused).
type Fingerprint [sha256.Size]byte

// FingerprintOf hashes the parts of a request that make it the same
// request: its target (topic), content type and body, each length-prefixed
// so that no two different requests hash the same bytes.
func FingerprintOf(parts ...[]byte) Fingerprint {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write(p)
	}
	var fp Fingerprint
	h.Sum(fp[:0])
	return fp
}

// Answer is what the original request answered, replayed to its retries.
type Answer struct {
	Status      int
	ContentType string
	Body        []byte
}

// Key bounds, checked by ValidKey (the HTTP gateway answers 400 beyond them).
const (
	MaxKeyBytes = 255
	// maxAnswerBytes bounds a stored answer; a produce answer is an
	// offset per record, far below it.
	maxAnswerBytes = 16 << 20
)

// ErrInvalidKey: the key is empty, too long, or has a byte outside the
// visible ASCII range (or a quote or backslash).
var ErrInvalidKey = errors.New("invalid idempotency key")

// ValidKey applies the key bounds: 1 to MaxKeyBytes bytes of visible
// ASCII, without '"' or '\' (so it is a Structured Field string's
// content, as the IETF draft's keys are, and prints in a log as sent).
func ValidKey(key string) error {
	if key == "" || len(key) > MaxKeyBytes {
		return fmt.Errorf("%w: %d bytes; 1 to %d are allowed", ErrInvalidKey, len(key), MaxKeyBytes)
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return fmt.Errorf("%w: byte %d (0x%02x) is not visible ASCII (quotes and backslashes excluded)", ErrInvalidKey, i, c)
		}
	}
	return nil
}

// PartitionOf is the keys topic partition that owns key: its leader
// answers for the key. FNV-1a is stable across versions and platforms.
func PartitionOf(key string, partitions int32) int32 {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int32(h.Sum32() % uint32(partitions))
}

// A key's record in the keys topic: the record key is the idempotency key,
// the value (big endian):
//
//	version   uint8  (1)
//	state     uint8  (1 pending: the request was started; 2 done)
//	fingerprint [32]byte
//	created   int64  (ms since the epoch: the window counts from it)
//	status    uint16 (done only; 0 when pending)
//	ctypeLen  uint16, ctype bytes
//	bodyLen   uint32, body bytes
//
// A null value (tombstone) forgets the key: written when the window is
// over, or when a started request wrote nothing.
const (
	recordVersion = 1
	statePending  = 1
	stateDone     = 2
	fixedBytes    = 1 + 1 + sha256.Size + 8 + 2 + 2 + 4
)

// storedKey is one decoded key record.
type storedKey struct {
	state   uint8
	fp      Fingerprint
	created int64
	answer  Answer
}

func encodeValue(k storedKey) []byte {
	b := make([]byte, 0, fixedBytes+len(k.answer.ContentType)+len(k.answer.Body))
	b = append(b, recordVersion, k.state)
	b = append(b, k.fp[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(k.created))
	b = binary.BigEndian.AppendUint16(b, uint16(k.answer.Status))
	b = binary.BigEndian.AppendUint16(b, uint16(len(k.answer.ContentType)))
	b = append(b, k.answer.ContentType...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(k.answer.Body)))
	return append(b, k.answer.Body...)
}

// errBadRecord: a value that is not a key record of a known version; the
// loader skips it (a later version's record stays for a later ferry).
var errBadRecord = errors.New("not a key record")

// decodeValue reads a value written by encodeValue; every length is
// checked against what is there.
func decodeValue(b []byte) (storedKey, error) {
	var k storedKey
	if len(b) < fixedBytes {
		return k, fmt.Errorf("%w: %d bytes, at least %d needed", errBadRecord, len(b), fixedBytes)
	}
	if b[0] != recordVersion {
		return k, fmt.Errorf("%w: version %d", errBadRecord, b[0])
	}
	k.state = b[1]
	if k.state != statePending && k.state != stateDone {
		return k, fmt.Errorf("%w: state %d", errBadRecord, k.state)
	}
	copy(k.fp[:], b[2:2+sha256.Size])
	rest := b[2+sha256.Size:]
	k.created = int64(binary.BigEndian.Uint64(rest))
	k.answer.Status = int(binary.BigEndian.Uint16(rest[8:]))
	ctLen := int(binary.BigEndian.Uint16(rest[10:]))
	rest = rest[12:]
	if ctLen > len(rest)-4 {
		return k, fmt.Errorf("%w: content type of %d bytes, %d left", errBadRecord, ctLen, len(rest)-4)
	}
	k.answer.ContentType = string(rest[:ctLen])
	rest = rest[ctLen:]
	bodyLen := int64(binary.BigEndian.Uint32(rest))
	rest = rest[4:]
	if bodyLen != int64(len(rest)) || bodyLen > maxAnswerBytes {
		return k, fmt.Errorf("%w: body of %d bytes, %d there", errBadRecord, bodyLen, len(rest))
	}
	k.answer.Body = append([]byte(nil), rest...)
	return k, nil
}
