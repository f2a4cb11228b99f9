package api

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/records"
)

// Content types of produce bodies.
const (
	typeJSON          = "application/json"
	typeNDJSON        = "application/x-ndjson"
	typeRestJSON      = "application/vnd.kafka.json.v2+json"
	typeRestBinary    = "application/vnd.kafka.binary.v2+json"
	typeRestV2        = "application/vnd.kafka.v2+json"
	typeFormURLEncode = "application/x-www-form-urlencoded"
)

// bodyFormat says how keys and values of a body become record bytes.
type bodyFormat int

const (
	// formatJSON: a string key is stored as its UTF-8 bytes (so it
	// partitions and reads like a Java client's String key); any other key
	// and every value as compact JSON text.
	formatJSON bodyFormat = iota
	// formatRestJSON: keys and values JSON-serialized, as REST Proxy's JSON
	// embedded format does (a string key keeps its quotes).
	formatRestJSON
	// formatRestBinary: keys and values are base64 of the raw bytes.
	formatRestBinary
	formatNDJSON
)

// producedOffsets is POST /kafka/{topic}'s answer: one offset per record,
// in request order (produce writes the same JSON without this type).
type producedOffsets struct {
	Offsets []server.RecordOffset `json:"offsets"`
}

// produceRecord documents one record of a produce body.
type produceRecord struct {
	// Key is any JSON (a JSON string key is stored as its UTF-8 bytes on
	// POST /kafka/{topic}); base64 in the binary format; Avro JSON in the
	// Avro format. Absent or null: a null key.
	Key any `json:"key"`
	// Value is encoded as Key is.
	Value any `json:"value"`
	// Partition is chosen from the key (or round robin) when absent.
	Partition *int32 `json:"partition,omitempty"`
	// Timestamp in ms since the epoch; the broker's time when absent.
	Timestamp *int64            `json:"timestamp,omitempty"`
	Headers   map[string]string `json:"headers,omitempty"`
}

// produceBody documents the {"records": […]} produce bodies for the spec
// (REST Proxy v2's, which POST /kafka/{topic} also takes). The produce
// path scans bodies itself (jsonscan.go) and the Avro path decodes into
// avroProduceBody; neither uses this type.
type produceBody struct {
	// KeySchema and ValueSchema are inline Avro schemas (Avro format
	// only), registered under <topic>-key and <topic>-value.
	KeySchema   string `json:"key_schema,omitempty"`
	KeySchemaID int    `json:"key_schema_id,omitempty"`
	ValueSchema string `json:"value_schema,omitempty"`
	// ValueSchemaID names a registered schema instead of value_schema.
	ValueSchemaID int             `json:"value_schema_id,omitempty"`
	Records       []produceRecord `json:"records"`
}

// produceState is per-request scratch reused across requests, so the
// produce path allocates per request, not per record.
type produceState struct {
	body   bytes.Buffer
	arena  []byte
	req    server.ProduceRequest
	limits produceLimits
}

var producePool = sync.Pool{New: func() any { return new(produceState) }}

// Above these sizes a request's scratch is left to the collector rather
// than pooled: a pool keeps what it holds for minutes, and one large body
// must not pin its buffers in every P's pool.
const (
	maxPooledBodyBytes = 1 << 20
	maxPooledRecords   = 4096
)

func getProduceState(topic string, limits produceLimits) *produceState {
	// putProduceState resets what it pools, and New is zero: no reset here.
	st := producePool.Get().(*produceState)
	st.req.Topic = topic
	st.limits = limits
	return st
}

func putProduceState(st *produceState) {
	if st.body.Cap() > maxPooledBodyBytes || cap(st.arena) > maxPooledBodyBytes || cap(st.req.Records) > maxPooledRecords ||
		cap(st.req.Offsets) > maxPooledRecords {
		return
	}
	st.reset("")
	producePool.Put(st)
}

func (s *produceState) reset(topic string) {
	s.body.Reset()
	s.arena = s.arena[:0]
	s.req.Topic = topic
	// Records hold slices of the last body and arena: drop them.
	clear(s.req.Records[:cap(s.req.Records)])
	s.req.Records = s.req.Records[:0]
	s.limits = produceLimits{}
}

// produceLimits refuse a body while it is scanned, as soon as it holds more
// records than one request may, or more than the topic's partitions can
// take (max.message.bytes each), rather than after building every batch.
type produceLimits struct {
	maxRecords int
	// maxRecordBytes is what one partition's records may encode to;
	// maxTotalBytes is that times the partition count.
	maxRecordBytes int
	maxTotalBytes  int
	totalBytes     int
	// refused is set by add when a limit is passed; the answer is 413.
	refused error
}

func (g *Gateway) produceLimitsFor(topicName string) produceLimits {
	l := g.broker.ProduceLimits(topicName)
	return produceLimits{
		maxRecords:     g.cfg.MaxRecordsPerRequest,
		maxRecordBytes: l.MaxRecordsBytes,
		maxTotalBytes:  int(l.Partitions) * l.MaxRecordsBytes,
	}
}

// minRecordBytes is a lower bound of rec's size in a batch: a record's
// length, attributes, timestamp and offset deltas, key and value lengths
// and header count take a byte each at least, each header two more.
func minRecordBytes(rec *records.Record) int {
	n := 7 + len(rec.Key) + len(rec.Value)
	for _, h := range rec.Headers {
		n += 2 + len(h.Key) + len(h.Value)
	}
	return n
}

// add appends rec unless a limit refuses it; its error ends the scan.
func (st *produceState) add(rec server.ProduceRecord) error {
	st.req.Records = append(st.req.Records, rec)
	return st.admitLast()
}

// admitLast keeps the last record of st.req.Records unless a limit
// refuses it (then it is dropped and the error ends the scan). Records
// are decoded in place, so a request copies none of them.
func (st *produceState) admitLast() error {
	l := &st.limits
	n := len(st.req.Records) - 1 // the record's index
	size := minRecordBytes(&st.req.Records[n].Record)
	l.totalBytes += size
	switch {
	case l.maxRecords > 0 && n >= l.maxRecords:
		l.refused = fmt.Errorf("the body holds more than %d records, the most one request may hold", l.maxRecords)
	case l.maxRecordBytes > 0 && size > l.maxRecordBytes:
		l.refused = fmt.Errorf("record %d encodes to at least %d bytes; max.message.bytes allows %d of records per batch",
			n, size, l.maxRecordBytes)
	case l.maxTotalBytes > 0 && l.totalBytes > l.maxTotalBytes:
		l.refused = fmt.Errorf("the first %d records encode to at least %d bytes, more than the topic's partitions take in one request (%d bytes each by max.message.bytes)",
			n+1, l.totalBytes, l.maxRecordBytes)
	default:
		return nil
	}
	st.req.Records[n] = server.ProduceRecord{}
	st.req.Records = st.req.Records[:n]
	return l.refused
}

// produce serves POST /kafka/{topic}.
//
//	@Summary		Produce records to a topic
//	@Description	The body is one of: any JSON value (one record with that value); {"records": [{"key", "value", "partition", "headers", "timestamp"}, …]} with JSON keys and values (application/json, also curl's default form type), REST Proxy's JSON- or binary-embedded formats, or Avro or JSON Schema (application/vnd.kafka.avro.v2+json, application/vnd.kafka.jsonschema.v2+json, see POST /topics/{topic}; they answer REST Proxy's shape with the schema ids); or newline-delimited JSON values (application/x-ndjson). All records are written or none; on a cluster any node takes records for every partition, forwarding them to the partitions' leaders, and a request some of whose partitions were written when another failed answers which (see 503). A topic that does not exist is created when the broker auto-creates topics.
//	@Tags			gateway
//	@Accept			json,application/x-ndjson,application/vnd.kafka.json.v2+json,application/vnd.kafka.binary.v2+json,application/vnd.kafka.avro.v2+json,application/vnd.kafka.jsonschema.v2+json,x-www-form-urlencoded
//	@Produce		json
//	@Param			topic			path		string		true	"topic name"
//	@Param			Idempotency-Key	header		string		false	"1–255 bytes of visible ASCII without quotes or backslashes (bare, or quoted as the IETF draft's structured string). A retry with the same key and the same request (principal, route and topic, content type, body) within --http-idempotency-window (default 1h), on any node, answers the original's status and body with Idempotent-Replayed: true and writes nothing. Recorded are successes and answers that wrote or may have written records (50303, partial writes); an answer that wrote nothing leaves the key free for the retry. See docs/http-idempotency.md"
//	@Param			body			body		produceBody	true	"records, a single JSON value, or JSON lines"
//	@Success		200				{object}	producedOffsets
//	@Header			200				{string}	Idempotent-Replayed	"true when the answer is the recorded answer of an earlier request with the same Idempotency-Key"
//	@Failure		400				{object}	errorBody	"40001: the body is empty or not JSON of an accepted shape; 40004: the Idempotency-Key is empty, too long, sent twice or has bytes outside visible ASCII"
//	@Failure		404				{object}	errorBody	"40401 no such topic (auto-creation off), 40402 no such partition"
//	@Failure		409				{object}	errorBody	"Avro: an inline schema is incompatible with the subject's (registry code 409); 40907: the original request with this Idempotency-Key is still in flight after the retry waited 35 s for it (Retry-After); 40908: the original request with this key was started by a node that stopped before recording its outcome: its records may or may not have been written and are not written again under this key"
//	@Failure		413				{object}	errorBody	"41301: the body or a record is over the limit"
//	@Failure		415				{object}	errorBody	"41501: the content type is not accepted"
//	@Failure		422				{object}	errorBody	"42201 invalid topic name, 42205 invalid record (Avro: does not match its schema), 42206 invalid timestamp; registry 42201 invalid schema; 42209: the Idempotency-Key was used with a different request within the window"
//	@Failure		500				{object}	errorBody	"50001/50002: internal or storage error"
//	@Failure		503				{object}	partialWriteBody	"50301: the node is shutting down, or Avro without a schema registry; 50302: fewer in-sync replicas than min.insync.replicas (nothing written); 50303: written but not acknowledged by the in-sync replicas in time; 50306: on a cluster, a partition of the request has no live leader (nothing written); 50307: the Idempotency-Key's owner (the leader of its __idempotency_keys partition) is being elected, loading or unreachable; 50308: the owner's memory for keys is full until keys expire. Every 503 carries Retry-After. A request that wrote some partitions but not others answers the first failure's status and code with offsets: each record's, -1 with error_code and error for those not written"
//	@Header			503				{string}	Retry-After	"seconds to wait before retrying"
//	@Router			/kafka/{topic} [post]
func (g *Gateway) produce(w http.ResponseWriter, r *http.Request) {
	g.produceAs(w, r, false)
}

// produceRestProxy serves REST Proxy v2's POST /topics/{topic}.
//
//	@Summary		Produce records, Confluent REST Proxy v2
//	@Description	Keys and values are JSON (vnd.kafka.json.v2+json, stored JSON-serialized), base64 (vnd.kafka.binary.v2+json) Avro JSON (vnd.kafka.avro.v2+json) or JSON documents of a JSON schema (vnd.kafka.jsonschema.v2+json): key_schema/value_schema are registered under <topic>-key/<topic>-value, or key_schema_id/value_schema_id name registered schemas of that type; each key and value is validated and stored in Confluent's wire format. All records are written or none. With an Idempotency-Key header, the key's answers and errors are POST /kafka/{topic}'s (40004, 40907, 40908, 42209, 50307, 50308).
//	@Tags			topics
//	@Accept			application/vnd.kafka.json.v2+json,application/vnd.kafka.binary.v2+json,application/vnd.kafka.avro.v2+json,application/vnd.kafka.jsonschema.v2+json
//	@Produce		application/vnd.kafka.v2+json,json
//	@Param			topic			path		string			true	"topic name"
//	@Param			Idempotency-Key	header		string			false	"as on POST /kafka/{topic}: a retry with the same key and request within the window answers the original and writes nothing (docs/http-idempotency.md)"
//	@Param			body			body		produceBody		true	"records"
//	@Success		200				{object}	restProduceAnswer
//	@Failure		400		{object}	errorBody	"40001: the body is not JSON of this shape"
//	@Failure		404		{object}	errorBody	"40401 no such topic (auto-creation off), 40402 no such partition; Avro: 40403 unknown schema id"
//	@Failure		409		{object}	errorBody	"Avro: an inline schema is incompatible with the subject's (registry code 409)"
//	@Failure		413		{object}	errorBody	"41301: the body or a record is over the limit"
//	@Failure		415		{object}	errorBody	"41501: the content type is not one of REST Proxy's"
//	@Failure		422		{object}	errorBody	"42201 invalid topic name, 42205 invalid record (Avro: does not match its schema), 42206 invalid timestamp; registry 42201 invalid schema"
//	@Failure		500		{object}	errorBody	"50001/50002: internal or storage error"
//	@Failure		503		{object}	errorBody	"50301: the node is shutting down, or Avro without a schema registry; 50302: fewer in-sync replicas than min.insync.replicas (nothing written); 50303: written but not acknowledged by the in-sync replicas in time; 50306: on a cluster, a partition of the request has no live leader (nothing written); with Retry-After. A request that wrote some partitions but not others answers 200, the records not written with offset -1, error_code (REST Proxy's: 1 not retriable, 2 retriable) and error"
//	@Header			503		{string}	Retry-After	"seconds to wait before retrying"
//	@Router			/topics/{topic} [post]
func (g *Gateway) produceRestProxy(w http.ResponseWriter, r *http.Request) {
	g.produceAs(w, r, true)
}

func (g *Gateway) produceAs(w http.ResponseWriter, r *http.Request, restProxy bool) {
	format, ok := produceFormat(r.Header.Get("Content-Type"), restProxy)
	if !ok {
		writeError(w, http.StatusUnsupportedMediaType, codeUnsupportedType, fmt.Sprintf(
			"content type %q is not supported; use %s, %s, %s or %s", r.Header.Get("Content-Type"),
			typeJSON, typeRestJSON, typeRestBinary, typeNDJSON))
		return
	}
	topicName := pathParam(r, "topic")
	if err := server.ValidateTopicName(topicName); err != nil {
		writeCoreError(w, err)
		return
	}
	st := getProduceState(topicName, g.produceLimitsFor(topicName))
	defer putProduceState(st)
	if r.ContentLength > 0 && r.ContentLength <= g.cfg.MaxRequestBytes {
		// ReadFrom doubles as it goes; a body of known size needs one buffer
		// (with the room ReadFrom wants free to see EOF).
		st.body.Grow(int(r.ContentLength) + bytes.MinRead)
	}
	if _, err := st.body.ReadFrom(r.Body); err != nil {
		writeCoreError(w, fmt.Errorf("read body: %w", err))
		return
	}
	if err := st.decode(format); err != nil {
		if st.limits.refused != nil {
			writeError(w, http.StatusRequestEntityTooLarge, codeTooLarge, st.limits.refused.Error())
			return
		}
		writeError(w, http.StatusBadRequest, codeMalformed, err.Error())
		return
	}
	res, err := g.broker.Produce(r.Context(), &st.req)
	// The answer is written before st goes back to the pool; the next
	// request on st reuses the offsets' array (req.Offsets).
	st.req.Offsets = res.Offsets[:0]
	partial, ok := partialWrite(err)
	if !ok {
		writeCoreError(w, err)
		return
	}
	if restProxy {
		writeRestProxyOffsets(w, res.Offsets, partial)
		return
	}
	if partial != nil {
		writePartialWrite(w, res.Offsets, partial)
		return
	}
	out := append(st.arena[:0], `{"offsets":[`...)
	for i, o := range res.Offsets {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"partition":`...)
		out = strconv.AppendInt(out, int64(o.Partition), 10)
		out = append(out, `,"offset":`...)
		out = strconv.AppendInt(out, o.Offset, 10)
		out = append(out, '}')
	}
	out = append(out, "]}\n"...)
	st.arena = out
	w.Header().Set("Content-Type", typeJSON)
	w.Write(out)
}

// partialWrite is err's *server.PartialWriteError; ok is false for any
// other error. Its variable is declared only on an error: one that
// errors.As fills is allocated where it is declared, and most requests
// succeed.
func partialWrite(err error) (partial *server.PartialWriteError, ok bool) {
	if err == nil {
		return nil, true
	}
	var pw *server.PartialWriteError
	if errors.As(err, &pw) {
		return pw, true
	}
	return nil, false
}

// produceFormat maps a Content-Type to a body format. curl's default form
// type is taken as JSON so `curl -d '{"id":1}'` works as people expect.
func produceFormat(contentType string, restProxy bool) (bodyFormat, bool) {
	mt := typeJSON
	if contentType != "" {
		var err error
		if mt, err = mediaType(contentType); err != nil {
			return 0, false
		}
	}
	switch mt {
	case typeRestJSON:
		return formatRestJSON, true
	case typeRestBinary:
		return formatRestBinary, true
	}
	if restProxy {
		return 0, false
	}
	switch mt {
	case typeJSON, typeFormURLEncode:
		return formatJSON, true
	case typeNDJSON:
		return formatNDJSON, true
	}
	return 0, false
}

// mediaType is mime.ParseMediaType's type without its parameter map: the
// common bare "application/json" costs no allocation on the produce path.
func mediaType(contentType string) (string, error) {
	if strings.IndexByte(contentType, ';') < 0 && isToken(contentType) {
		return contentType, nil
	}
	mt, _, err := mime.ParseMediaType(contentType)
	return mt, err
}

// isToken accepts a bare type/subtype of lower-case RFC 2045 token bytes.
func isToken(s string) bool {
	slash := strings.IndexByte(s, '/')
	if slash <= 0 || slash == len(s)-1 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if i != slash && !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("!#$&-^_.+", c) >= 0) {
			return false
		}
	}
	return true
}

// decode turns st.body into st.req.Records in one pass over the bytes.
func (st *produceState) decode(format bodyFormat) error {
	sc := scanner{data: st.body.Bytes(), arena: &st.arena}
	if sc.atEnd() {
		return errors.New("the body is empty")
	}
	switch format {
	case formatNDJSON:
		return st.decodeNDJSON(sc.data)
	case formatJSON:
		if sc.peek() != '{' {
			return st.singleValue(&sc)
		}
	}
	found, err := st.decodeRecordsObject(&sc, format)
	switch {
	case err != nil:
		return err
	case !found && format == formatJSON:
		// An object without a "records" array is itself the value.
		st.req.Records = st.req.Records[:0]
		st.limits.totalBytes = 0
		return st.singleValue(&scanner{data: sc.data, arena: &st.arena})
	case !found:
		return errors.New(`the body needs a "records" array`)
	case len(st.req.Records) == 0:
		return errors.New(`"records" is empty`)
	}
	return nil
}

func (st *produceState) singleValue(sc *scanner) error {
	value, err := sc.value()
	if err == nil {
		err = sc.end()
	}
	if err != nil {
		return fmt.Errorf("the body is not valid JSON: %v", err)
	}
	return st.add(server.ProduceRecord{Partition: server.PartitionAuto, Record: records.Record{Value: value}})
}

// decodeRecordsObject reads {"records": [...], ...}; other top-level keys
// (REST Proxy's key_schema and the like) are skipped.
func (st *produceState) decodeRecordsObject(sc *scanner, format bodyFormat) (found bool, err error) {
	err = sc.objectKeys(func(key []byte) error {
		if string(key) != "records" || sc.peek() != '[' {
			return sc.skipValue(1)
		}
		found = true
		st.req.Records = st.req.Records[:0]
		st.limits.totalBytes = 0
		return sc.arrayItems(func(i int) error {
			st.req.Records = append(st.req.Records, server.ProduceRecord{Partition: server.PartitionAuto})
			if err := st.record(sc, format, &st.req.Records[len(st.req.Records)-1]); err != nil {
				return fmt.Errorf("records[%d]: %v", i, err)
			}
			return st.admitLast()
		})
	})
	if err == nil {
		err = sc.end()
	}
	if err != nil {
		return false, fmt.Errorf("the body is not a valid JSON object with a \"records\" array: %v", err)
	}
	return found, nil
}

func (st *produceState) decodeNDJSON(body []byte) error {
	line := 0
	for len(body) > 0 {
		line++
		current := body
		body = nil
		if i := bytes.IndexByte(current, '\n'); i >= 0 {
			current, body = current[:i], current[i+1:]
		}
		sc := scanner{data: current, arena: &st.arena}
		if sc.atEnd() {
			continue
		}
		value, err := sc.value()
		if err == nil {
			err = sc.end()
		}
		if err != nil {
			return fmt.Errorf("line %d is not valid JSON: %v", line, err)
		}
		if err := st.add(server.ProduceRecord{Partition: server.PartitionAuto, Record: records.Record{Value: value}}); err != nil {
			return err
		}
	}
	if len(st.req.Records) == 0 {
		return errors.New("the body has no JSON lines")
	}
	return nil
}

// record reads one {"key","value","partition","headers","timestamp"}
// object into pr.
func (st *produceState) record(sc *scanner, format bodyFormat, pr *server.ProduceRecord) error {
	return sc.objectKeys(func(key []byte) error {
		var err error
		switch string(key) {
		case "key":
			pr.Record.Key, err = st.field(sc, format, true)
		case "value":
			pr.Record.Value, err = st.field(sc, format, false)
		case "partition":
			if !sc.isNull() {
				var n int64
				n, err = sc.integer(0, math.MaxInt32)
				pr.Partition = int32(n)
			}
		case "timestamp":
			if !sc.isNull() {
				// The core judges timestamps for both listeners.
				pr.Record.Timestamp, err = sc.integer(math.MinInt64, math.MaxInt64)
			}
		case "headers":
			pr.Record.Headers, err = st.headers(sc)
		default:
			err = sc.skipValue(1)
		}
		if err != nil {
			return fmt.Errorf("%s: %v", key, err)
		}
		return nil
	})
}

func (st *produceState) headers(sc *scanner) ([]records.Header, error) {
	if sc.isNull() {
		return nil, nil
	}
	var hs []records.Header
	err := sc.objectKeys(func(key []byte) error {
		v, err := sc.str()
		if err != nil {
			return fmt.Errorf("header %q: values are strings: %v", key, err)
		}
		hs = append(hs, records.Header{Key: string(key), Value: v})
		return nil
	})
	return hs, err
}

// field encodes a key or value; absent or null is a Kafka null.
func (st *produceState) field(sc *scanner, format bodyFormat, isKey bool) ([]byte, error) {
	if sc.isNull() {
		return nil, nil
	}
	switch {
	case format == formatRestBinary:
		s, err := sc.str()
		if err != nil {
			return nil, errors.New("must be a base64 string")
		}
		start := len(st.arena)
		st.arena = append(st.arena, make([]byte, base64.StdEncoding.DecodedLen(len(s)))...)
		n, err := base64.StdEncoding.Decode(st.arena[start:], s)
		if err != nil {
			return nil, fmt.Errorf("invalid base64: %v", err)
		}
		st.arena = st.arena[:start+n]
		return st.arena[start : start+n : start+n], nil
	case format == formatJSON && isKey && sc.peek() == '"':
		return sc.str()
	}
	return sc.value()
}

// restProxyOffset is REST Proxy v2's per-record answer.
type restProxyOffset struct {
	Partition int32   `json:"partition"`
	Offset    int64   `json:"offset"`
	ErrorCode *int    `json:"error_code"`
	Error     *string `json:"error"`
}

// restProduceAnswer is REST Proxy v2's produce answer; the schema ids are
// set for Avro, else null.
type restProduceAnswer struct {
	KeySchemaID   *int              `json:"key_schema_id"`
	ValueSchemaID *int              `json:"value_schema_id"`
	Offsets       []restProxyOffset `json:"offsets"`
}

func writeRestProxyOffsets(w http.ResponseWriter, offsets []server.RecordOffset, partial *server.PartialWriteError) {
	out := restProduceAnswer{Offsets: restProxyOffsets(offsets, partial)}
	writeJSON(w, http.StatusOK, typeRestV2, out)
}

// REST Proxy v2's per-record error codes: the record failed for a reason
// a retry may not cure, or one it may.
const (
	restProxyNonRetriable = 1
	restProxyRetriable    = 2
)

// restProxyOffsets is REST Proxy v2's offsets array; a record of a
// partition the request failed to write carries offset -1 and its
// error_code and error (as REST Proxy answers a partly failed produce:
// 200, the failures per record).
func restProxyOffsets(offsets []server.RecordOffset, partial *server.PartialWriteError) []restProxyOffset {
	out := make([]restProxyOffset, len(offsets))
	for i, o := range offsets {
		out[i] = restProxyOffset{Partition: o.Partition, Offset: o.Offset}
		if partial == nil || o.Offset >= 0 {
			continue
		}
		if err := partial.FailedPartition(o.Partition); err != nil {
			code := restProxyNonRetriable
			if status, _ := coreErrorStatus(err); status == http.StatusServiceUnavailable {
				code = restProxyRetriable
			}
			msg := err.Error()
			out[i].ErrorCode, out[i].Error = &code, &msg
		}
	}
	return out
}

// partialWriteBody is POST /kafka/{topic}'s answer when some partitions
// were written and others not: the first failure's status, error_code
// and message (naming every failed partition), and the offsets of the
// request's records in request order, those not written with offset -1
// and their partition's error. A client retries only those.
type partialWriteBody struct {
	ErrorCode int    `json:"error_code" example:"50306"`
	Message   string `json:"message"`
	// Offsets is present only when some records were written.
	Offsets []partialWriteOffset `json:"offsets,omitempty"`
} //	@name	ProduceError

type partialWriteOffset struct {
	Partition int32 `json:"partition"`
	Offset    int64 `json:"offset"`
	// ErrorCode and Error are set on the records not written.
	ErrorCode int    `json:"error_code,omitempty"`
	Error     string `json:"error,omitempty"`
}

func writePartialWrite(w http.ResponseWriter, offsets []server.RecordOffset, partial *server.PartialWriteError) {
	status, code := coreErrorStatus(partial)
	body := partialWriteBody{ErrorCode: code, Message: partial.Error(), Offsets: make([]partialWriteOffset, len(offsets))}
	for i, o := range offsets {
		body.Offsets[i] = partialWriteOffset{Partition: o.Partition, Offset: o.Offset}
		if err := partial.FailedPartition(o.Partition); err != nil && o.Offset < 0 {
			_, body.Offsets[i].ErrorCode = coreErrorStatus(err)
			body.Offsets[i].Error = err.Error()
		}
	}
	if rec, ok := w.(errorCodeSetter); ok {
		rec.setErrorCode(code)
	}
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", retryAfterSeconds)
	}
	writeJSON(w, status, typeJSON, body)
}
