package api

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/records"
)

// Limits of GET /kafka/{topic}/partitions/{p}/records.
const (
	defaultMaxRecords = 500
	maxMaxRecords     = 10000
	defaultReadBytes  = 1 << 20
)

// Encodings of keys, values and header values in read answers.
const (
	encodingJSON   = "json"   // the bytes are JSON: the field holds it as is
	encodingString = "string" // UTF-8 text that is not JSON: a JSON string
	encodingBase64 = "base64" // anything else: base64 of the bytes
)

type readRecord struct {
	Topic         string `json:"topic"`
	Partition     int32  `json:"partition"`
	Offset        int64  `json:"offset"`
	Timestamp     int64  `json:"timestamp"`
	TimestampType string `json:"timestamp_type" enums:"CreateTime,LogAppendTime"`
	// Key is the key's JSON when the bytes are JSON, else a string (see
	// key_encoding); null for a null key.
	Key         json.RawMessage `json:"key"`
	KeyEncoding string          `json:"key_encoding,omitempty" enums:"string,base64,avro,jsonschema"`
	// Value is rendered as Key is.
	Value         json.RawMessage `json:"value"`
	ValueEncoding string          `json:"value_encoding,omitempty" enums:"string,base64,avro,jsonschema"`
	// Headers is always present, {} when the record has none.
	Headers map[string]string `json:"headers"`
}

type readAnswer struct {
	Topic          string       `json:"topic"`
	Partition      int32        `json:"partition"`
	Records        []readRecord `json:"records"`
	NextOffset     int64        `json:"next_offset"`
	HighWatermark  int64        `json:"high_watermark"`
	LogStartOffset int64        `json:"log_start_offset"`
}

type readParams struct {
	offset     int64
	maxRecords int
	maxBytes   int
	wait       time.Duration
	// readCommitted: isolation=read_committed.
	readCommitted bool
}

// readRecords serves GET /kafka/{topic}/partitions/{partition}/records.
//
//	@Summary		Read records from a partition
//	@Description	Records from offset on, up to max_records and max_bytes, waiting up to timeout_ms for the first when there are none. Keys and values that are JSON are returned as JSON, other UTF-8 text as a string (key_encoding/value_encoding "string"), other bytes as base64 ("base64"). On a cluster any node answers: from its in-sync replica (never above its high watermark), else from the leader. With format=avro or format=jsonschema, keys and values in Confluent's wire format whose schema is of that type are decoded through the schema registry into JSON (encoding "avro" or "jsonschema", with key_schema_id/value_schema_id).
//	@Tags			gateway
//	@Produce		json
//	@Param			topic		path		string	true	"topic name"
//	@Param			partition	path		integer	true	"partition number"
//	@Param			offset		query		string	false	"first offset: a number, earliest (default) or latest"
//	@Param			max_records	query		integer	false	"at most this many records (default 500, at most 10000)"	minimum(1)	maximum(10000)
//	@Param			max_bytes	query		integer	false	"at most about this many bytes of rendered keys, values and headers, after decompression (default 1 MiB; capped by the gateway's MaxFetchBytes); the first record comes back even when larger"	minimum(1)
//	@Param			timeout_ms	query		integer	false	"long-poll up to this long for a first record (default 0; capped by MaxFetchWait)"	minimum(0)
//	@Param			format		query		string	false	"avro, jsonschema: decode Confluent wire-format keys and values through the registry"	Enums(avro,jsonschema)
//	@Param			isolation	query		string	false	"read_uncommitted (default): every record below the high watermark; read_committed: only below the last stable offset, without the records of aborted transactions. Transaction markers are never shown."	Enums(read_uncommitted,read_committed)
//	@Success		200			{object}	avroReadAnswer
//	@Failure		400			{object}	errorBody	"40002: a path or query parameter is not valid"
//	@Failure		404			{object}	errorBody	"40401 no such topic, 40402 no such partition"
//	@Failure		416			{object}	errorBody	"41601: the offset is outside the log"
//	@Failure		422			{object}	errorBody	"42205: a stored batch does not decode"
//	@Failure		500			{object}	errorBody	"50001/50002: internal or storage error"
//	@Failure		503			{object}	errorBody	"50301: format=avro or jsonschema without a schema registry, or the node is shutting down; 50306: on a cluster, the partition has no live leader and no in-sync replica here (Retry-After)"
//	@Router			/kafka/{topic}/partitions/{partition}/records [get]
func (g *Gateway) readRecords(w http.ResponseWriter, r *http.Request) {
	topicName := pathParam(r, "topic")
	partition, err := strconv.ParseInt(pathParam(r, "partition"), 10, 32)
	if err != nil {
		writeError(w, http.StatusBadRequest, codeBadParam, "partition must be an integer")
		return
	}
	params, err := g.parseReadParams(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, codeBadParam, err.Error())
		return
	}
	if params.offset < 0 { // earliest or latest
		if params.offset, _, err = g.broker.ConsumerListOffset(r.Context(), topicName, int32(partition), params.offset); err != nil {
			writeCoreError(w, err)
			return
		}
	}
	rr := getReadRenderer()
	defer putReadRenderer(rr)
	// On a cluster, from this node's replica when it is in sync, else
	// from the partition's leader.
	res, err := g.broker.ConsumerFetch(r.Context(), server.FetchRequest{
		Topic: topicName, Partition: int32(partition), Offset: params.offset,
		MaxBytes: params.maxBytes, MaxWait: params.wait, ReadCommitted: params.readCommitted,
	}, rr.fetched[:0])
	rr.fetched = res.Data
	if err != nil {
		writeCoreError(w, err)
		return
	}
	// Rendered as json.Marshal renders readAnswer, into one buffer (render.go).
	b := appendAnswerHead(rr.out[:0], topicName, int32(partition))
	taken, next := 0, params.offset
	budget := answerBudget{left: params.maxBytes}
	stopped := false
	err = records.Decode(res.Data, params.offset, g.broker.Config().MaxDecompressedBytes, func(rec records.Record) bool {
		if rec.Offset >= res.HighWatermark || taken >= params.maxRecords || (taken > 0 && !budget.admits(rec)) {
			stopped = true
			return false
		}
		if taken > 0 {
			b = append(b, ',')
		}
		var size int
		b, size = rr.appendRecord(b, topicName, int32(partition), rec)
		taken, next = taken+1, rec.Offset+1
		// Returning false as soon as the budget is spent keeps Decode from
		// decompressing another batch only to drop it.
		if !budget.spend(size) {
			stopped = true
			return false
		}
		return true
	})
	if !stopped && res.ReadEnd > next {
		// Everything read was taken: continue after it, past transaction
		// markers and aborted batches, which show no record.
		next = res.ReadEnd
	}
	rr.out = b
	if err != nil {
		writeCoreError(w, fmt.Errorf("%w: decode %s-%d: %v", server.ErrCorruptMessage, topicName, partition, err))
		return
	}
	rr.out = appendAnswerTail(b, next, res.HighWatermark, res.LogStartOffset)
	w.Header().Set("Content-Type", typeJSON)
	w.WriteHeader(http.StatusOK)
	w.Write(rr.out)
}

// parseReadParams reads the query; the offset is server.OffsetEarliest or
// OffsetLatest when the query names one.
func (g *Gateway) parseReadParams(r *http.Request) (readParams, error) {
	q := r.URL.Query()
	params := readParams{offset: server.OffsetEarliest, maxRecords: defaultMaxRecords, maxBytes: defaultReadBytes}
	switch v := q.Get("offset"); v {
	case "", "earliest", "beginning":
	case "latest", "end":
		params.offset = server.OffsetLatest
	default:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return params, fmt.Errorf("offset %q: want a non-negative integer, earliest or latest", v)
		}
		params.offset = n
	}
	var err error
	if params.maxRecords, err = intParam(q.Get("max_records"), defaultMaxRecords, 1, maxMaxRecords); err != nil {
		return params, fmt.Errorf("max_records: %v", err)
	}
	if params.maxBytes, err = intParam(q.Get("max_bytes"), defaultReadBytes, 1, g.cfg.MaxFetchBytes); err != nil {
		return params, fmt.Errorf("max_bytes: %v", err)
	}
	waitMs, err := intParam(q.Get("timeout_ms"), 0, 0, int(g.cfg.MaxFetchWait.Milliseconds()))
	if err != nil {
		return params, fmt.Errorf("timeout_ms: %v", err)
	}
	params.wait = time.Duration(waitMs) * time.Millisecond
	if params.readCommitted, err = isolationParam(q.Get("isolation")); err != nil {
		return params, err
	}
	return params, nil
}

// defaultHTTPIsolation is what new HTTP consumers (REST Proxy instances,
// SSE streams) read at when they name none: a REST user expects to see
// only committed transactions. The offset-addressed read route keeps
// read_uncommitted, Kafka's own default for a fetch.
const defaultHTTPIsolation = "read_committed"

// isolationParam reads isolation=read_committed|read_uncommitted (empty:
// read_uncommitted, as the route always answered).
func isolationParam(v string) (readCommitted bool, err error) {
	switch v {
	case "", "read_uncommitted":
		return false, nil
	case "read_committed":
		return true, nil
	}
	return false, fmt.Errorf("isolation %q: want read_committed or read_uncommitted", v)
}

func intParam(v string, def, min, max int) (int, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%q is not an integer", v)
	}
	if n < min || n > max {
		return 0, fmt.Errorf("%d is outside [%d, %d]", n, min, max)
	}
	return n, nil
}

// encodeBytes renders record bytes for a JSON answer: JSON as is, text as a
// string, anything else as base64, with the encoding named unless it is JSON.
// The result is a copy: Decode's buffers are reused.
func encodeBytes(b []byte) (json.RawMessage, string) {
	switch {
	case b == nil:
		return json.RawMessage("null"), ""
	case utf8.Valid(b) && json.Valid(b):
		// json.Valid passes invalid UTF-8 inside strings; echoing that
		// would make the whole answer invalid UTF-8, so such bytes go base64.
		return append(json.RawMessage(nil), b...), ""
	case utf8.Valid(b):
		s, _ := json.Marshal(string(b))
		return s, encodingString
	}
	s, _ := json.Marshal(base64.StdEncoding.EncodeToString(b))
	return s, encodingBase64
}

// answerBudget bounds one read answer in rendered bytes (max_bytes), the way
// Kafka's fetch.max.bytes bounds a fetch. The caller admits the first
// record whatever its size, so a reader progresses past a record larger
// than the budget.
type answerBudget struct {
	left int
}

// admits reports whether rec, not the answer's first, may still join it;
// its raw size is a lower bound of its rendered size, known before
// rendering it.
func (b *answerBudget) admits(rec records.Record) bool {
	return rawSize(rec) <= b.left
}

// spend charges n rendered bytes and reports whether any budget is left.
func (b *answerBudget) spend(n int) bool {
	b.left -= n
	return b.left > 0
}

func rawSize(rec records.Record) int {
	n := len(rec.Key) + len(rec.Value)
	for _, h := range rec.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return n
}
