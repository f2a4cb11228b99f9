package api

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// A search cursor is what is left to scan: per partition, the offsets
// [lo, hi) not yet looked at. Oldest-first scans raise lo, newest-first
// lower hi, so whatever order and budget, a record is scanned once: a
// resumed search has neither gaps nor duplicates. The cursor also carries
// the fingerprint of the filters and order it was made for. It is opaque
// to clients (base64url of a small JSON document) and checked whole on
// input; its ranges are clamped to the log when scanned (retention may
// have moved the log start since).

// maxCursorText bounds a cursor before it is decoded; it fits a query
// string under the gateway's header limit.
const maxCursorText = 48 << 10

const cursorVersion = 1

type scanRange struct {
	Partition int32
	Lo, Hi    int64
}

type searchCursor struct {
	fingerprint uint64
	newest      bool
	ranges      []scanRange
}

type cursorJSON struct {
	V int        `json:"v"`
	F string     `json:"f"`
	O string     `json:"o"`
	P [][3]int64 `json:"p"`
}

// encode renders the cursor; ranges already scanned to the end are left out.
func (c *searchCursor) encode() string {
	doc := cursorJSON{V: cursorVersion, F: strconv.FormatUint(c.fingerprint, 36), O: "o", P: [][3]int64{}}
	if c.newest {
		doc.O = "n"
	}
	for _, r := range c.ranges {
		if r.Lo < r.Hi {
			doc.P = append(doc.P, [3]int64{int64(r.Partition), r.Lo, r.Hi})
		}
	}
	b, _ := json.Marshal(doc)
	return base64.RawURLEncoding.EncodeToString(b)
}

var errBadCursor = errors.New("cursor is not one this search made")

// decodeCursor parses a cursor from a client; partitions is the topic's
// partition count. Every field is checked: version, order, partitions in
// range and each named once, 0 <= lo <= hi.
func decodeCursor(s string, partitions int32) (*searchCursor, error) {
	if len(s) > maxCursorText {
		return nil, fmt.Errorf("%w: longer than %d bytes", errBadCursor, maxCursorText)
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%w: not base64url", errBadCursor)
	}
	var doc cursorJSON
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("%w: %v", errBadCursor, err)
	}
	if doc.V != cursorVersion {
		return nil, fmt.Errorf("%w: version %d", errBadCursor, doc.V)
	}
	fp, err := strconv.ParseUint(doc.F, 36, 64)
	if err != nil {
		return nil, fmt.Errorf("%w: bad fingerprint", errBadCursor)
	}
	c := &searchCursor{fingerprint: fp}
	switch doc.O {
	case "n":
		c.newest = true
	case "o":
	default:
		return nil, fmt.Errorf("%w: order %q", errBadCursor, doc.O)
	}
	if len(doc.P) > int(partitions) {
		return nil, fmt.Errorf("%w: %d partitions, the topic has %d", errBadCursor, len(doc.P), partitions)
	}
	seen := make(map[int64]bool, len(doc.P))
	for _, p := range doc.P {
		part, lo, hi := p[0], p[1], p[2]
		if part < 0 || part >= int64(partitions) || seen[part] {
			return nil, fmt.Errorf("%w: partition %d", errBadCursor, part)
		}
		if lo < 0 || hi < lo {
			return nil, fmt.Errorf("%w: range [%d, %d) of partition %d", errBadCursor, lo, hi, part)
		}
		seen[part] = true
		c.ranges = append(c.ranges, scanRange{Partition: int32(part), Lo: lo, Hi: hi})
	}
	return c, nil
}
