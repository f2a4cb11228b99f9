package api

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"net/http"

	"github.com/ferry-mq/ferry/schemaregistry"
)

// GET /kafka/{topic}/partitions/{p}/records?format=avro|jsonschema: the
// plain read, then every key and value in Confluent's wire format (magic
// 0, 4-byte schema id, then the payload) whose schema is of the format's
// type is decoded through the registry into JSON (Avro JSON; the JSON
// document), with key_encoding/value_encoding "avro" or "jsonschema" and
// the schema id alongside.
// Bytes that are not wire format, whose schema is unknown, or that the
// registry's bounded decoder refuses (counts beyond the bytes present,
// nesting past schemaregistry.MaxAvroDepth, too much JSON) are left as the
// plain read renders them.

const (
	encodingAvro       = "avro"
	encodingJSONSchema = "jsonschema"
	encodingProtobuf   = "protobuf"
)

// readFormats maps ?format= values to the registry type they decode
// (PROTOBUF decodes nothing until the registry serves it).
var readFormats = map[string]string{
	encodingAvro:       schemaregistry.TypeAvro,
	encodingJSONSchema: schemaregistry.TypeJSONSchema,
	encodingProtobuf:   schemaregistry.TypeProtobuf,
}

// maxAvroAnswerText bounds the Avro JSON one read answer holds: the plain
// read is bounded by max_bytes, but Avro JSON can be far larger than its
// binary (field names, escapes, values that encode in zero bytes). Keys and
// values past the budget are left as the plain read renders them.
const maxAvroAnswerText = 32 << 20

type avroReadRecord struct {
	readRecord
	KeySchemaID   int `json:"key_schema_id,omitempty"`
	ValueSchemaID int `json:"value_schema_id,omitempty"`
}

type avroReadAnswer struct {
	Topic          string           `json:"topic"`
	Partition      int32            `json:"partition"`
	Records        []avroReadRecord `json:"records"`
	NextOffset     int64            `json:"next_offset"`
	HighWatermark  int64            `json:"high_watermark"`
	LogStartOffset int64            `json:"log_start_offset"`
}

// avroReadOr serves ?format=avro reads by decoding h's answer.
func (g *Gateway) avroReadOr(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		format := r.URL.Query().Get("format")
		typ, ok := readFormats[format]
		if !ok {
			h(w, r)
			return
		}
		if g.cfg.Schemas == nil {
			writeError(w, http.StatusServiceUnavailable, codeUnavailable, "format="+format+" needs the schema registry, which is not configured on this node")
			return
		}
		buf := &bufferedResponse{header: http.Header{}, status: http.StatusOK}
		h(buf, r)
		var plain readAnswer
		if buf.status != http.StatusOK || json.Unmarshal(buf.body.Bytes(), &plain) != nil {
			buf.copyTo(w)
			return
		}
		ans := avroReadAnswer{Topic: plain.Topic, Partition: plain.Partition, NextOffset: plain.NextOffset,
			HighWatermark: plain.HighWatermark, LogStartOffset: plain.LogStartOffset,
			Records: make([]avroReadRecord, len(plain.Records))}
		budget := maxAvroAnswerText
		for i, rec := range plain.Records {
			out := avroReadRecord{readRecord: rec}
			out.KeySchemaID = g.decodeAvroField(r, typ, format, &out.Key, &out.KeyEncoding, &budget)
			out.ValueSchemaID = g.decodeAvroField(r, typ, format, &out.Value, &out.ValueEncoding, &budget)
			ans.Records[i] = out
		}
		writeJSON(w, http.StatusOK, typeJSON, ans)
	}
}

// decodeAvroField replaces a rendered key or value with its JSON form and
// returns the schema id, or leaves it and returns 0: when it is not wire
// format, its schema is unknown or not of type typ, it does not decode
// within the type's bounds, or its JSON would not fit in what is left of
// budget.
func (g *Gateway) decodeAvroField(r *http.Request, typ, format string, field *json.RawMessage, encoding *string, budget *int) int {
	raw, ok := renderedBytes(*field, *encoding)
	if !ok {
		return 0
	}
	text, id, ok := g.renderWire(r, typ, raw, budget)
	if !ok {
		return 0
	}
	*field, *encoding = text, format
	return id
}

// renderWire decodes raw, in Confluent's wire format with a schema of type
// typ, into JSON through the registry and takes its length from budget;
// ok is false when raw is not wire format, its schema is unknown or of
// another type, it does not decode within the type's bounds, or its JSON
// would not fit in what is left of budget.
func (g *Gateway) renderWire(r *http.Request, typ string, raw []byte, budget *int) (text json.RawMessage, id int, ok bool) {
	if len(raw) < 5 || raw[0] != 0 || *budget <= 0 {
		return nil, 0, false
	}
	id = int(binary.BigEndian.Uint32(raw[1:5]))
	parsed, err := g.cfg.Schemas.ParsedSchemaByID(r.Context(), id)
	if err != nil || parsed.Type() != typ {
		return nil, 0, false
	}
	text, err = parsed.RenderJSON(raw[5:], *budget)
	if err != nil || !json.Valid(text) {
		return nil, 0, false
	}
	*budget -= len(text)
	return text, id, true
}

// renderedBytes undoes encodeBytes for string and base64 encodings (wire
// format never renders as JSON: it starts with a zero byte).
func renderedBytes(field json.RawMessage, encoding string) ([]byte, bool) {
	var s string
	if encoding == "" || json.Unmarshal(field, &s) != nil {
		return nil, false
	}
	switch encoding {
	case encodingString:
		return []byte(s), true
	case encodingBase64:
		b, err := base64.StdEncoding.DecodeString(s)
		return b, err == nil
	}
	return nil, false
}

// bufferedResponse holds a handler's answer so it can be rewritten.
type bufferedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header         { return b.header }
func (b *bufferedResponse) Write(p []byte) (int, error) { return b.body.Write(p) }
func (b *bufferedResponse) WriteHeader(status int)      { b.status = status }

func (b *bufferedResponse) copyTo(w http.ResponseWriter) {
	for k, v := range b.header {
		w.Header()[k] = v
	}
	w.WriteHeader(b.status)
	w.Write(b.body.Bytes())
}
