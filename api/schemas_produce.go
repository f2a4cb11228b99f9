package api

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/ferry-mq/ferry/schemaregistry"
	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/records"
)

// Schema'd produce: POST /kafka/{topic} and REST Proxy v2's POST
// /topics/{topic} with application/vnd.kafka.avro.v2+json or
// application/vnd.kafka.jsonschema.v2+json. Each record's key and value
// are the JSON form of a value of the schema (Avro JSON; a JSON document),
// checked against the schema and stored in Confluent's wire format (magic
// 0, 4-byte big-endian schema id, then Avro binary or the JSON text), so
// Confluent's deserializers read them. An inline schema is registered
// under <topic>-key / <topic>-value (TopicNameStrategy), with the
// subject's compatibility rules. One bad record rejects the request and
// nothing is written.

const (
	typeRestAvro       = "application/vnd.kafka.avro.v2+json"
	typeRestJSONSchema = "application/vnd.kafka.jsonschema.v2+json"
	typeRestProtobuf   = "application/vnd.kafka.protobuf.v2+json"
)

// restSchemaTypes maps REST Proxy's embedded formats to registry types. A
// type the registry does not serve (PROTOBUF until it is plugged in)
// fails at the schema: registering it is a 42201, and no id names one.
var restSchemaTypes = map[string]string{
	typeRestAvro:       schemaregistry.TypeAvro,
	typeRestJSONSchema: schemaregistry.TypeJSONSchema,
	typeRestProtobuf:   schemaregistry.TypeProtobuf,
}

// formatNames name the types in messages.
var formatNames = map[string]string{schemaregistry.TypeAvro: "Avro", schemaregistry.TypeJSONSchema: "JSON Schema", schemaregistry.TypeProtobuf: "Protobuf"}

// avroOr routes Avro and JSON Schema bodies to produceAvro and every other
// body to h.
func (g *Gateway) avroOr(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if mt, err := mediaType(r.Header.Get("Content-Type")); err == nil {
			if typ, ok := restSchemaTypes[mt]; ok {
				g.produceAvro(w, r, typ)
				return
			}
		}
		h(w, r)
	}
}

type avroProduceBody struct {
	KeySchema     string            `json:"key_schema"`
	KeySchemaID   int               `json:"key_schema_id"`
	ValueSchema   string            `json:"value_schema"`
	ValueSchemaID int               `json:"value_schema_id"`
	Records       []avroProduceItem `json:"records"`
}

type avroProduceItem struct {
	Key       json.RawMessage   `json:"key"`
	Value     json.RawMessage   `json:"value"`
	Partition *int32            `json:"partition"`
	Timestamp *int64            `json:"timestamp"`
	Headers   map[string]string `json:"headers"`
}

// avroSide is the schema of keys or of values in one request.
type avroSide struct {
	id     int
	schema schemaregistry.Schema
}

// produceAvro serves a produce body whose records follow schemas of type typ.
func (g *Gateway) produceAvro(w http.ResponseWriter, r *http.Request, typ string) {
	if g.cfg.Schemas == nil {
		writeError(w, http.StatusServiceUnavailable, codeUnavailable, formatNames[typ]+" needs the schema registry, which is not configured on this node")
		return
	}
	topic := pathParam(r, "topic")
	if err := server.ValidateTopicName(topic); err != nil {
		writeCoreError(w, err)
		return
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		writeCoreError(w, err)
		return
	}
	if n := avroRecordCount(raw, g.cfg.MaxRecordsPerRequest); n > g.cfg.MaxRecordsPerRequest {
		writeError(w, http.StatusRequestEntityTooLarge, codeTooLarge,
			fmt.Sprintf("the body holds more than %d records, the most one request may hold", g.cfg.MaxRecordsPerRequest))
		return
	}
	var body avroProduceBody
	if err := json.Unmarshal(raw, &body); err != nil {
		writeError(w, http.StatusBadRequest, codeMalformed, "the body is not a valid "+formatNames[typ]+" produce request: "+err.Error())
		return
	}
	if len(body.Records) == 0 {
		writeError(w, http.StatusBadRequest, codeMalformed, `"records" is missing or empty`)
		return
	}
	keys, values, err := g.avroSchemas(r, topic, typ, &body)
	if err != nil {
		writeRegistryError(w, r, err)
		return
	}
	req := server.ProduceRequest{Topic: topic, Records: make([]server.ProduceRecord, len(body.Records))}
	for i, item := range body.Records {
		pr, err := encodeAvroRecord(item, keys, values)
		if err != nil {
			writeError(w, http.StatusUnprocessableEntity, codeInvalidRecord, fmt.Sprintf("records[%d].%v; nothing was written", i, err))
			return
		}
		req.Records[i] = pr
	}
	res, err := g.broker.Produce(r.Context(), &req)
	var partial *server.PartialWriteError
	if err != nil && !errors.As(err, &partial) {
		writeCoreError(w, err)
		return
	}
	writeAvroOffsets(w, res.Offsets, partial, keys, values)
}

// avroSchemas resolves the key and value schemas: by id, or registered
// inline under the topic's subjects.
func (g *Gateway) avroSchemas(r *http.Request, topic, typ string, body *avroProduceBody) (keys, values *avroSide, err error) {
	var needKey, needValue bool
	for _, item := range body.Records {
		needKey = needKey || !isJSONNull(item.Key)
		needValue = needValue || !isJSONNull(item.Value)
	}
	if keys, err = g.avroSide(r, topic+"-key", typ, body.KeySchema, body.KeySchemaID); err != nil {
		return nil, nil, err
	}
	if values, err = g.avroSide(r, topic+"-value", typ, body.ValueSchema, body.ValueSchemaID); err != nil {
		return nil, nil, err
	}
	switch {
	case needKey && keys == nil:
		return nil, nil, &schemaregistry.Error{Code: 42201, Message: "records have keys but the request has neither key_schema nor key_schema_id"}
	case needValue && values == nil:
		return nil, nil, &schemaregistry.Error{Code: 42201, Message: "records have values but the request has neither value_schema nor value_schema_id"}
	}
	return keys, values, nil
}

func (g *Gateway) avroSide(r *http.Request, subject, typ, schema string, id int) (*avroSide, error) {
	if schema == "" && id == 0 {
		return nil, nil
	}
	if schema != "" {
		var err error
		if id, err = g.cfg.Schemas.Register(r.Context(), subject, schemaregistry.SchemaRequest{Schema: schema, SchemaType: typ}); err != nil {
			return nil, err
		}
	}
	parsed, err := g.cfg.Schemas.ParsedSchemaByID(r.Context(), id)
	if err != nil {
		return nil, err
	}
	if parsed.Type() != typ {
		return nil, &schemaregistry.Error{Code: 42201, Message: fmt.Sprintf("schema %d is a %s schema; this request's content type carries %s records", id, parsed.Type(), typ)}
	}
	return &avroSide{id: id, schema: parsed}, nil
}

func isJSONNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

func encodeAvroRecord(item avroProduceItem, keys, values *avroSide) (server.ProduceRecord, error) {
	pr := server.ProduceRecord{Partition: server.PartitionAuto}
	if item.Partition != nil {
		if *item.Partition < 0 {
			return pr, errors.New("partition: must be >= 0")
		}
		pr.Partition = *item.Partition
	}
	if item.Timestamp != nil {
		if *item.Timestamp < 0 {
			return pr, errors.New("timestamp: must be >= 0")
		}
		pr.Record.Timestamp = *item.Timestamp
	}
	for k, v := range item.Headers {
		pr.Record.Headers = append(pr.Record.Headers, records.Header{Key: k, Value: []byte(v)})
	}
	var err error
	if pr.Record.Key, err = encodeAvro(item.Key, keys); err != nil {
		return pr, fmt.Errorf("key: %v", err)
	}
	if pr.Record.Value, err = encodeAvro(item.Value, values); err != nil {
		return pr, fmt.Errorf("value: %v", err)
	}
	return pr, nil
}

// encodeAvro turns the JSON form of a value into Confluent's wire format;
// absent or null is a Kafka null.
func encodeAvro(raw json.RawMessage, side *avroSide) ([]byte, error) {
	if isJSONNull(raw) {
		return nil, nil
	}
	payload, err := side.schema.EncodeJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("does not match schema %d: %v", side.id, err)
	}
	out := make([]byte, 5, 5+len(payload))
	binary.BigEndian.PutUint32(out[1:], uint32(side.id))
	return append(out, payload...), nil
}

func writeAvroOffsets(w http.ResponseWriter, offsets []server.RecordOffset, partial *server.PartialWriteError, keys, values *avroSide) {
	out := struct {
		KeySchemaID   *int              `json:"key_schema_id"`
		ValueSchemaID *int              `json:"value_schema_id"`
		Offsets       []restProxyOffset `json:"offsets"`
	}{Offsets: restProxyOffsets(offsets, partial)}
	if keys != nil {
		out.KeySchemaID = &keys.id
	}
	if values != nil {
		out.ValueSchemaID = &values.id
	}
	writeJSON(w, http.StatusOK, typeRestV2, out)
}

// avroRecordCount counts the items of the body's top-level "records"
// array, stopping once it passes limit. encoding/json builds a struct per
// item before anything could count them, so a 16 MiB body of `{},` items
// would cost gigabytes; the scanner costs nothing per item. A body the
// scanner cannot read counts 0: json.Unmarshal then says what is wrong.
func avroRecordCount(body []byte, limit int) int {
	s := scanner{data: body, arena: new([]byte)}
	n := 0
	errEnough := errors.New("enough")
	s.skipSpace()
	s.objectKeys(func(key []byte) error {
		if string(key) != "records" || s.peek() != '[' {
			return s.skipValue(1)
		}
		return s.arrayItems(func(int) error {
			if n++; n > limit {
				return errEnough
			}
			return s.skipValue(2)
		})
	})
	return n
}
