package api

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"sync"

	"github.com/go-chi/chi/v5"

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

// httpRecord is one element of a "records" array.
type httpRecord struct {
	Key       json.RawMessage   `json:"key"`
	Value     json.RawMessage   `json:"value"`
	Partition *int32            `json:"partition"`
	Headers   map[string]string `json:"headers"`
	Timestamp *int64            `json:"timestamp"`
}

type producedOffsets struct {
	Offsets []server.RecordOffset `json:"offsets"`
}

// produceState is per-request scratch reused across requests, so the
// produce path allocates per request, not per record.
type produceState struct {
	body  bytes.Buffer
	arena []byte
	req   server.ProduceRequest
	batch struct {
		Records []httpRecord `json:"records"`
	}
}

var producePool = sync.Pool{New: func() any { return new(produceState) }}

func (s *produceState) reset(topic string) {
	s.body.Reset()
	s.arena = s.arena[:0]
	s.req.Topic = topic
	s.req.Records = s.req.Records[:0]
	// encoding/json decodes into existing slice elements without zeroing
	// them, so a field absent from this request would keep the last one's value.
	clear(s.batch.Records[:cap(s.batch.Records)])
	s.batch.Records = s.batch.Records[:0]
}

// produce serves POST /kafka/{topic}.
func (g *Gateway) produce(w http.ResponseWriter, r *http.Request) {
	g.produceAs(w, r, false)
}

// produceRestProxy serves REST Proxy v2's POST /topics/{topic}.
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
	st := producePool.Get().(*produceState)
	defer producePool.Put(st)
	st.reset(chi.URLParam(r, "topic"))
	if _, err := st.body.ReadFrom(r.Body); err != nil {
		writeCoreError(w, fmt.Errorf("read body: %w", err))
		return
	}
	if err := st.decode(format, restProxy); err != nil {
		writeError(w, http.StatusBadRequest, codeMalformed, err.Error())
		return
	}
	if err := server.ValidateTopicName(st.req.Topic); err != nil {
		writeCoreError(w, err)
		return
	}
	res, err := g.broker.Produce(r.Context(), &st.req)
	if err != nil {
		writeCoreError(w, err)
		return
	}
	if restProxy {
		writeRestProxyOffsets(w, res.Offsets)
		return
	}
	writeJSON(w, http.StatusOK, typeJSON, producedOffsets{Offsets: res.Offsets})
}

// produceFormat maps a Content-Type to a body format. curl's default form
// type is taken as JSON so `curl -d '{"id":1}'` works as people expect.
func produceFormat(contentType string, restProxy bool) (bodyFormat, bool) {
	mt := typeJSON
	if contentType != "" {
		var err error
		if mt, _, err = mime.ParseMediaType(contentType); err != nil {
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

// decode turns st.body into st.req.Records.
func (st *produceState) decode(format bodyFormat, restProxy bool) error {
	body := bytes.TrimSpace(st.body.Bytes())
	if len(body) == 0 {
		return errors.New("the body is empty")
	}
	switch {
	case format == formatNDJSON:
		return st.decodeNDJSON(body)
	case format == formatJSON && !isRecordsObject(body):
		value, err := st.compact(body)
		if err != nil {
			return fmt.Errorf("the body is not valid JSON: %v", err)
		}
		st.req.Records = append(st.req.Records, server.ProduceRecord{
			Partition: server.PartitionAuto,
			Record:    records.Record{Value: value},
		})
		return nil
	}
	if err := json.Unmarshal(body, &st.batch); err != nil {
		return fmt.Errorf("the body is not a JSON object with a \"records\" array: %v", err)
	}
	if len(st.batch.Records) == 0 {
		return errors.New("\"records\" is empty")
	}
	for i := range st.batch.Records {
		rec, err := st.toRecord(&st.batch.Records[i], format)
		if err != nil {
			return fmt.Errorf("records[%d]: %v", i, err)
		}
		st.req.Records = append(st.req.Records, rec)
	}
	return nil
}

// isRecordsObject tells a batch body ({"records": [...]}) from a single JSON
// value that happens to be an object.
func isRecordsObject(body []byte) bool {
	if body[0] != '{' {
		return false
	}
	var probe struct {
		Records json.RawMessage `json:"records"`
	}
	if json.Unmarshal(body, &probe) != nil {
		return false
	}
	trimmed := bytes.TrimSpace(probe.Records)
	return len(trimmed) > 0 && trimmed[0] == '['
}

func (st *produceState) decodeNDJSON(body []byte) error {
	line := 0
	for len(body) > 0 {
		line++
		var next []byte
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			body, next = body[:i], body[i+1:]
		} else {
			next = nil
		}
		if v := bytes.TrimSpace(body); len(v) > 0 {
			value, err := st.compact(v)
			if err != nil {
				return fmt.Errorf("line %d is not valid JSON: %v", line, err)
			}
			st.req.Records = append(st.req.Records, server.ProduceRecord{
				Partition: server.PartitionAuto,
				Record:    records.Record{Value: value},
			})
		}
		body = next
	}
	if len(st.req.Records) == 0 {
		return errors.New("the body has no JSON lines")
	}
	return nil
}

func (st *produceState) toRecord(hr *httpRecord, format bodyFormat) (server.ProduceRecord, error) {
	pr := server.ProduceRecord{Partition: server.PartitionAuto}
	if hr.Partition != nil {
		if *hr.Partition < 0 {
			return pr, fmt.Errorf("partition %d is negative", *hr.Partition)
		}
		pr.Partition = *hr.Partition
	}
	var err error
	if pr.Record.Key, err = st.field(hr.Key, format, true); err != nil {
		return pr, fmt.Errorf("key: %v", err)
	}
	if pr.Record.Value, err = st.field(hr.Value, format, false); err != nil {
		return pr, fmt.Errorf("value: %v", err)
	}
	if hr.Timestamp != nil {
		if *hr.Timestamp < 0 {
			return pr, fmt.Errorf("timestamp %d is negative", *hr.Timestamp)
		}
		pr.Record.Timestamp = *hr.Timestamp
	}
	for k, v := range hr.Headers {
		pr.Record.Headers = append(pr.Record.Headers, records.Header{Key: k, Value: []byte(v)})
	}
	return pr, nil
}

var jsonNull = []byte("null")

// field encodes a key or value; absent or null is a Kafka null.
func (st *produceState) field(raw json.RawMessage, format bodyFormat, isKey bool) ([]byte, error) {
	if len(raw) == 0 || bytes.Equal(raw, jsonNull) {
		return nil, nil
	}
	switch format {
	case formatRestBinary:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, errors.New("must be a base64 string")
		}
		start := len(st.arena)
		st.arena = append(st.arena, make([]byte, base64.StdEncoding.DecodedLen(len(s)))...)
		n, err := base64.StdEncoding.Decode(st.arena[start:], []byte(s))
		if err != nil {
			return nil, fmt.Errorf("invalid base64: %v", err)
		}
		st.arena = st.arena[:start+n]
		return st.arena[start : start+n : start+n], nil
	case formatJSON:
		if isKey && raw[0] == '"' {
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return nil, err
			}
			start := len(st.arena)
			st.arena = append(st.arena, s...)
			return st.arena[start:len(st.arena):len(st.arena)], nil
		}
	}
	return st.compact(raw)
}

// compact appends compact JSON to the request's arena; slices into the
// arena stay valid when it grows, because the old array is never rewritten.
func (st *produceState) compact(src []byte) ([]byte, error) {
	buf := bytes.NewBuffer(st.arena)
	start := buf.Len()
	if err := json.Compact(buf, src); err != nil {
		return nil, err
	}
	st.arena = buf.Bytes()
	return st.arena[start:len(st.arena):len(st.arena)], nil
}

// restProxyOffset is REST Proxy v2's per-record answer.
type restProxyOffset struct {
	Partition int32   `json:"partition"`
	Offset    int64   `json:"offset"`
	ErrorCode *int    `json:"error_code"`
	Error     *string `json:"error"`
}

func writeRestProxyOffsets(w http.ResponseWriter, offsets []server.RecordOffset) {
	out := struct {
		KeySchemaID   *int              `json:"key_schema_id"`
		ValueSchemaID *int              `json:"value_schema_id"`
		Offsets       []restProxyOffset `json:"offsets"`
	}{Offsets: make([]restProxyOffset, len(offsets))}
	for i, o := range offsets {
		out.Offsets[i] = restProxyOffset{Partition: o.Partition, Offset: o.Offset}
	}
	writeJSON(w, http.StatusOK, typeRestV2, out)
}
