package checkpoint

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// File names, as Kafka names them.
const (
	LeaderEpochFile       = "leader-epoch-checkpoint"
	ReplicationOffsetFile = "replication-offset-checkpoint"
	RecoveryPointFile     = "recovery-point-offset-checkpoint"
)

// version is the only format version Kafka has written.
const version = 0

// ErrMalformed is wrapped by every decoding error.
var ErrMalformed = errors.New("malformed checkpoint file")

// EpochEntry is one line of leader-epoch-checkpoint: the first offset
// written in a leader epoch.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// OffsetEntry is one line of replication-offset-checkpoint or
// recovery-point-offset-checkpoint.
type OffsetEntry struct {
	Topic     string
	Partition int32
	Offset    int64
}

// EncodeEpochs returns the file holding entries, in their order.
func EncodeEpochs(entries []EpochEntry) []byte {
	b := appendHeader(make([]byte, 0, 8+len(entries)*16), len(entries))
	for _, e := range entries {
		b = strconv.AppendInt(b, int64(e.Epoch), 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, e.StartOffset, 10)
		b = append(b, '\n')
	}
	return b
}

// EncodeOffsets returns the file holding entries, in their order. It
// refuses a topic name that would not read back (empty, too long, or with
// characters Kafka forbids, such as spaces).
func EncodeOffsets(entries []OffsetEntry) ([]byte, error) {
	b := appendHeader(make([]byte, 0, 8+len(entries)*32), len(entries))
	for _, e := range entries {
		if err := checkTopic(e.Topic); err != nil {
			return nil, fmt.Errorf("encode checkpoint: %w", err)
		}
		b = append(b, e.Topic...)
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(e.Partition), 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, e.Offset, 10)
		b = append(b, '\n')
	}
	return b, nil
}

func appendHeader(b []byte, count int) []byte {
	b = strconv.AppendInt(b, version, 10)
	b = append(b, '\n')
	b = strconv.AppendInt(b, int64(count), 10)
	return append(b, '\n')
}

// DecodeEpochs parses a leader-epoch-checkpoint. It checks the format
// only; the order of the entries is the epoch cache's to judge (it applies
// them one by one, as Kafka's does on load).
func DecodeEpochs(data []byte) ([]EpochEntry, error) {
	var out []EpochEntry
	err := decode(data, 2, func(n int) { out = make([]EpochEntry, 0, n) }, func(f []string) error {
		epoch, err := parseNonNegative(f[0], 31)
		if err != nil {
			return fmt.Errorf("epoch: %w", err)
		}
		start, err := parseNonNegative(f[1], 63)
		if err != nil {
			return fmt.Errorf("start offset: %w", err)
		}
		out = append(out, EpochEntry{Epoch: int32(epoch), StartOffset: start})
		return nil
	})
	return out, err
}

// DecodeOffsets parses a replication-offset-checkpoint or
// recovery-point-offset-checkpoint. A partition listed twice is an error:
// no writer produces one, so it means the file is not what it claims.
func DecodeOffsets(data []byte) ([]OffsetEntry, error) {
	var out []OffsetEntry
	var seen map[OffsetEntry]struct{} // keyed with Offset 0
	err := decode(data, 3, func(n int) {
		out = make([]OffsetEntry, 0, n)
		seen = make(map[OffsetEntry]struct{}, n)
	}, func(f []string) error {
		if err := checkTopic(f[0]); err != nil {
			return err
		}
		partition, err := parseNonNegative(f[1], 31)
		if err != nil {
			return fmt.Errorf("partition: %w", err)
		}
		offset, err := parseNonNegative(f[2], 63)
		if err != nil {
			return fmt.Errorf("offset: %w", err)
		}
		key := OffsetEntry{Topic: f[0], Partition: int32(partition)}
		if _, dup := seen[key]; dup {
			return fmt.Errorf("partition %s-%d listed twice", key.Topic, key.Partition)
		}
		seen[key] = struct{}{}
		key.Offset = offset
		out = append(out, key)
		return nil
	})
	return out, err
}

// decode walks the header and the entry lines of data. alloc is called
// once with the number of entry lines actually present (never the claimed
// count, which is untrusted), entry once per line with its fields.
func decode(data []byte, fields int, alloc func(n int), entry func(f []string) error) error {
	lines := splitLines(data)
	if len(lines) == 0 {
		alloc(0)
		return nil // Kafka reads an empty file as no entries
	}
	if v, err := parseNonNegative(lines[0], 31); err != nil || v != version {
		return malformed(1, lines[0], "unsupported version (want %d)", version)
	}
	if len(lines) == 1 {
		alloc(0)
		return nil // as Kafka: a version line alone is an empty checkpoint
	}
	count, err := parseNonNegative(lines[1], 31)
	if err != nil {
		return malformed(2, lines[1], "entry count: %v", err)
	}
	body := lines[2:]
	if int64(len(body)) != count {
		return fmt.Errorf("%w: claims %d entries, holds %d lines", ErrMalformed, count, len(body))
	}
	alloc(len(body))
	for i, line := range body {
		f := strings.Fields(line)
		if len(f) != fields {
			return malformed(i+3, line, "want %d fields, got %d", fields, len(f))
		}
		if err := entry(f); err != nil {
			return malformed(i+3, line, "%v", err)
		}
	}
	return nil
}

// splitLines splits data as Java's BufferedReader.readLine, which Kafka
// reads with, would for files it writes: lines end with "\n" (a "\r" before
// it is dropped), and a last line without one still counts.
func splitLines(data []byte) []string {
	if len(data) == 0 {
		return nil
	}
	s := string(data)
	s = strings.TrimSuffix(s, "\n")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

func parseNonNegative(s string, bits int) (int64, error) {
	v, err := strconv.ParseInt(s, 10, bits+1)
	if err != nil {
		return 0, errors.Unwrap(err) // strconv's ErrSyntax or ErrRange, without the input repeated
	}
	if v < 0 {
		return 0, errors.New("negative")
	}
	return v, nil
}

// checkTopic applies Kafka's topic name rules, which also keep a name from
// splitting into two fields.
func checkTopic(t string) error {
	switch {
	case t == "":
		return errors.New("empty topic name")
	case len(t) > 249:
		return fmt.Errorf("topic name of %d characters (limit 249)", len(t))
	case t == "." || t == "..":
		return fmt.Errorf("topic name %q", t)
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("topic name %.40q has character %q", t, c)
		}
	}
	return nil
}

// malformed names the 1-based line and quotes at most 60 bytes of it, so a
// hostile file cannot make the error huge.
func malformed(line int, text, format string, args ...any) error {
	if len(text) > 60 {
		text = text[:60] + "..."
	}
	return fmt.Errorf("%w: line %d %q: %s", ErrMalformed, line, text, fmt.Sprintf(format, args...))
}
