package api

// Rendering a read answer straight into one pooled buffer, without
// building readRecord values and marshalling them: encoding/json would
// allocate per record (the headers map, the rendered key and value) and
// re-validate, by reflection, JSON values already validated. The bytes are
// exactly json.Marshal's for readAnswer (a test compares them): JSON keys
// and values compacted with <, >, &, U+2028 and U+2029 escaped, strings
// escaped as encoding/json does, header names sorted with the last
// duplicate winning, as a map would.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/ferry-mq/ferry/server/records"
)

// maxPooledRenderBytes keeps answers larger than this from pinning their
// buffers in the pool.
const maxPooledRenderBytes = 4 << 20

// readRenderer holds the buffers one read answer is built in.
type readRenderer struct {
	fetched []byte       // the batches read
	out     []byte       // the answer
	compact bytes.Buffer // a JSON key or value compacted
	headers []int        // header indexes, sorted by name
}

var readRenderers = sync.Pool{New: func() any { return new(readRenderer) }}

func getReadRenderer() *readRenderer { return readRenderers.Get().(*readRenderer) }

func putReadRenderer(r *readRenderer) {
	if cap(r.fetched) > maxPooledRenderBytes || cap(r.out) > maxPooledRenderBytes || r.compact.Cap() > maxPooledRenderBytes {
		return
	}
	readRenderers.Put(r)
}

// appendAnswerHead starts a readAnswer: everything before its records.
func appendAnswerHead(b []byte, topic string, partition int32) []byte {
	b = append(b, `{"topic":`...)
	b = appendJSONString(b, topic)
	b = append(b, `,"partition":`...)
	b = strconv.AppendInt(b, int64(partition), 10)
	return append(b, `,"records":[`...)
}

// appendAnswerTail ends a readAnswer, with writeJSON's newline.
func appendAnswerTail(b []byte, next, highWatermark, logStart int64) []byte {
	b = append(b, `],"next_offset":`...)
	b = strconv.AppendInt(b, next, 10)
	b = append(b, `,"high_watermark":`...)
	b = strconv.AppendInt(b, highWatermark, 10)
	b = append(b, `,"log_start_offset":`...)
	b = strconv.AppendInt(b, logStart, 10)
	return append(b, "}\n"...)
}

// appendRecord appends rec as json.Marshal renders it as a readRecord,
// and returns about what it adds to the answer (renderedSize in the
// tests: the field names and numbers counted as 160 bytes, keys and
// values as encodeBytes renders them, header names and values raw).
func (r *readRenderer) appendRecord(b []byte, topic string, partition int32, rec records.Record) ([]byte, int) {
	b = append(b, `{"topic":`...)
	b = appendJSONString(b, topic)
	b = append(b, `,"partition":`...)
	b = strconv.AppendInt(b, int64(partition), 10)
	b = append(b, `,"offset":`...)
	b = strconv.AppendInt(b, rec.Offset, 10)
	b = append(b, `,"timestamp":`...)
	b = strconv.AppendInt(b, rec.Timestamp, 10)
	if rec.TimestampType == 1 {
		b = append(b, `,"timestamp_type":"LogAppendTime","key":`...)
	} else {
		b = append(b, `,"timestamp_type":"CreateTime","key":`...)
	}
	size := len(topic) + 160
	var n int
	b, n = r.appendField(b, rec.Key, "key_encoding")
	size += n
	b = append(b, `,"value":`...)
	b, n = r.appendField(b, rec.Value, "value_encoding")
	size += n
	b = append(b, `,"headers":`...)
	b, n = r.appendHeaders(b, rec.Headers)
	return append(b, '}'), size + n
}

// appendField appends a key or value as encodeBytes renders it, then its
// encoding field when there is one; n is len of encodeBytes' rendering.
func (r *readRenderer) appendField(b, v []byte, encodingName string) (_ []byte, n int) {
	start := len(b)
	encoding := ""
	switch {
	case v == nil:
		return append(b, "null"...), 4
	case utf8.Valid(v) && r.compactJSON(v):
		b = appendHTMLEscaped(b, r.compact.Bytes())
		n = len(v) // encodeBytes keeps the JSON as sent
	case utf8.Valid(v):
		b = appendJSONString(b, v)
		encoding, n = encodingString, len(b)-start
	default:
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, v)
		b = append(b, '"')
		encoding, n = encodingBase64, len(b)-start
	}
	if encoding != "" {
		b = append(b, `,"`...)
		b = append(b, encodingName...)
		b = append(b, `":"`...)
		b = append(b, encoding...)
		b = append(b, '"')
	}
	return b, n
}

// compactJSON compacts v into r.compact and reports whether v is JSON:
// one pass that both validates and compacts.
func (r *readRenderer) compactJSON(v []byte) bool {
	if !mayBeJSON(v) {
		return false // plain text: spare the scanner's error, which allocates
	}
	r.compact.Reset()
	return json.Compact(&r.compact, v) == nil
}

// mayBeJSON reports whether v starts as a JSON value can, after white space.
func mayBeJSON(v []byte) bool {
	for _, c := range v {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '{', '[', '"', '-', 't', 'f', 'n', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			return true
		}
		return false
	}
	return false
}

// appendHeaders appends the headers object, names sorted, the last of
// duplicates kept; n is renderedSize's share of them.
func (r *readRenderer) appendHeaders(b []byte, hs []records.Header) (_ []byte, n int) {
	switch len(hs) {
	case 0:
		return append(b, "{}"...), 0
	case 1:
		return append(appendHeader(append(b, '{'), hs[0]), '}'), len(hs[0].Key) + len(hs[0].Value) + 6
	}
	idx := r.headers[:0]
	for i := range hs {
		idx = append(idx, i)
	}
	slices.SortStableFunc(idx, func(i, j int) int { return strings.Compare(hs[i].Key, hs[j].Key) })
	r.headers = idx
	b = append(b, '{')
	first := true
	for k, i := range idx {
		if k+1 < len(idx) && hs[idx[k+1]].Key == hs[i].Key {
			continue // a later duplicate wins
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendHeader(b, hs[i])
		n += len(hs[i].Key) + len(hs[i].Value) + 6
	}
	return append(b, '}'), n
}

func appendHeader(b []byte, h records.Header) []byte {
	b = appendJSONString(b, h.Key)
	b = append(b, ':')
	return appendJSONString(b, h.Value)
}

const hexDigits = "0123456789abcdef"

// appendHTMLEscaped appends compact JSON with encoding/json's HTML escaping.
func appendHTMLEscaped(b, src []byte) []byte {
	start := 0
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '<' || c == '>' || c == '&':
			b = append(b, src[start:i]...)
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			start = i + 1
		case c == 0xE2 && i+2 < len(src) && src[i+1] == 0x80 && src[i+2]&^1 == 0xA8:
			b = append(b, src[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[src[i+2]&0xF])
			start = i + 3
			i += 2
		}
	}
	return append(b, src[start:]...)
}

// appendJSONString appends s as encoding/json encodes a string: quoted,
// with HTML escaping, invalid UTF-8 as U+FFFD.
func appendJSONString[S []byte | string](b []byte, s S) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			b = appendEscapedASCII(b, c)
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(string(s[i:min(len(s), i+utf8.UTFMax)]))
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

func appendEscapedASCII(b []byte, c byte) []byte {
	switch c {
	case '\\', '"':
		return append(b, '\\', c)
	case '\b':
		return append(b, '\\', 'b')
	case '\f':
		return append(b, '\\', 'f')
	case '\n':
		return append(b, '\\', 'n')
	case '\r':
		return append(b, '\\', 'r')
	case '\t':
		return append(b, '\\', 't')
	}
	return append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
}
