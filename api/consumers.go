package api

// Confluent REST Proxy v2 consumers over the group coordinator.
//
//	POST   /consumers/{group}                                  create an instance
//	DELETE /consumers/{group}/instances/{instance}             delete it (commits with auto commit)
//	POST   /consumers/{group}/instances/{instance}/subscription {"topics":[…]} or {"topic_pattern":"…"}
//	GET    …/subscription, DELETE …/subscription, GET …/assignments
//	GET    …/records?timeout=&max_bytes=                       Accept: application/vnd.kafka.{json,binary,avro,jsonschema,protobuf}.v2+json
//	POST   …/offsets                                           commit the given offsets, or all consumed with no body
//	GET    …/offsets                                           committed offsets ({"partitions":[…]} body, or all assigned)
//
// Unlike REST Proxy, an instance is not pinned to the node that created
// it: its state lives in the group coordinator (server/group), and it is a
// group member there, sharing partitions with Kafka clients of the group.
// As in REST Proxy, a committed offset names the last record consumed: the
// group stores offset+1, the next to read. Records carry their timestamp
// and headers as well (REST Proxy v2 has neither).

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ferry-mq/ferry/server/group"
)

// REST Proxy's error codes for consumers.
const (
	codeConsumerNotFound  = 40403
	codeFormatMismatch    = 40601
	codeConsumerExists    = 40902
	codeIllegalState      = 40903
	codeIncompatibleGroup = 40904
	codeInvalidConsumer   = 42204
	codeNoOffsetReset     = 40904 + 1 // 40905: no committed offset and auto.offset.reset none
	codeGroupsUnavailable = 50302
	// codeNotCoordinator: on a cluster, another broker coordinates the
	// group; the message names it.
	codeNotCoordinator      = 50305
	defaultConsumerTimeout  = time.Second
	defaultConsumerMaxBytes = 1 << 20
)

// groupErrors is the table from coordinator errors to HTTP answers; other
// errors go through httpErrors.
var groupErrors = []struct {
	err    error
	status int
	code   int
}{
	{group.ErrConsumerNotFound, http.StatusNotFound, codeConsumerNotFound},
	{group.ErrConsumerExists, http.StatusConflict, codeConsumerExists},
	{group.ErrNotSubscribed, http.StatusConflict, codeIllegalState},
	{group.ErrInconsistentProtocol, http.StatusConflict, codeIncompatibleGroup},
	{group.ErrInvalidConsumer, http.StatusUnprocessableEntity, codeInvalidConsumer},
	{group.ErrNoOffsetReset, http.StatusConflict, codeNoOffsetReset},
	{group.ErrCommitRejected, http.StatusInternalServerError, codeStorage},
	{group.ErrClosed, http.StatusServiceUnavailable, codeUnavailable},
	{group.ErrNotCoordinator, http.StatusServiceUnavailable, codeNotCoordinator},
}

func writeGroupError(w http.ResponseWriter, err error) {
	for _, m := range groupErrors {
		if errors.Is(err, m.err) {
			writeError(w, m.status, m.code, err.Error())
			return
		}
	}
	writeCoreError(w, err)
}

// requireGroups answers 503 when the gateway has no coordinator.
func (g *Gateway) requireGroups(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if g.groups == nil {
			writeError(w, http.StatusServiceUnavailable, codeGroupsUnavailable, "consumer groups are not enabled on this gateway")
			return
		}
		next(w, r)
	}
}

// decodeRestBody reads an optional JSON body (application/json or
// application/vnd.kafka.v2+json); an empty body leaves v as it is and
// reports false.
func decodeRestBody(w http.ResponseWriter, r *http.Request, v any) (present, ok bool) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != typeJSON && mt != typeRestV2 && mt != typeRestJSON && mt != typeRestBinary) {
			writeError(w, http.StatusUnsupportedMediaType, codeUnsupportedType,
				fmt.Sprintf("content type %q is not supported; use %s", ct, typeRestV2))
			return false, false
		}
	}
	data, err := io.ReadAll(r.Body)
	if err != nil {
		writeCoreError(w, err)
		return false, false
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		return false, true
	}
	if err := json.Unmarshal(data, v); err != nil {
		writeError(w, http.StatusBadRequest, codeMalformed, "invalid JSON body: "+err.Error())
		return false, false
	}
	return true, true
}

type createConsumerBody struct {
	// Name is the instance id; generated when empty.
	Name string `json:"name"`
	// Format is how records are rendered: binary, json, or a schema
	// format (avro, jsonschema, protobuf) decoding Confluent's wire format
	// through the registry.
	Format string `json:"format" enums:"binary,json,avro,jsonschema,protobuf" example:"json"`
	// AutoOffsetReset is where a partition without a commit starts.
	AutoOffsetReset string `json:"auto.offset.reset" enums:"earliest,latest,none"`
	// AutoCommit is true (the default) or false, as a boolean or a string.
	AutoCommit json.RawMessage `json:"auto.commit.enable" swaggertype:"boolean"`
	// Isolation is read_committed (the default, as a REST user expects:
	// records of aborted transactions skipped, none past the last stable
	// offset) or read_uncommitted.
	Isolation string `json:"isolation.level" enums:"read_uncommitted,read_committed"`
}

// consumerInstance is POST /consumers/{group}'s answer (fields in the
// order a map would encode them, as before this type existed).
type consumerInstance struct {
	// BaseURI is where the instance's routes are, as the client reached us.
	BaseURI    string `json:"base_uri"`
	InstanceID string `json:"instance_id"`
}

// createConsumer serves POST /consumers/{group}.
//
//	@Summary		Create a consumer instance in a group (REST Proxy v2)
//	@Description	The instance is a member of the group in the coordinator, sharing partitions with the group's Kafka clients. The body may be empty.
//	@Tags			consumers
//	@Accept			application/vnd.kafka.v2+json,json,application/vnd.kafka.json.v2+json,application/vnd.kafka.binary.v2+json
//	@Produce		application/vnd.kafka.v2+json,json
//	@Param			group	path		string				true	"group id"
//	@Param			body	body		createConsumerBody	false	"instance options"
//	@Success		200		{object}	consumerInstance
//	@Failure		400		{object}	errorBody	"40001: the body is not JSON"
//	@Failure		409		{object}	errorBody	"40902: an instance of that name exists; 40904: the group's members use another protocol"
//	@Failure		413		{object}	errorBody	"41301: the body is over the request limit"
//	@Failure		415		{object}	errorBody	"41501: the content type is not accepted"
//	@Failure		422		{object}	errorBody	"42204: an invalid option (format, auto.offset.reset, auto.commit.enable, isolation.level, name)"
//	@Failure		503		{object}	errorBody	"50302: consumer groups are not enabled; 50301: shutting down"
//	@Router			/consumers/{group} [post]
func (g *Gateway) createConsumer(w http.ResponseWriter, r *http.Request) {
	var body createConsumerBody
	if _, ok := decodeRestBody(w, r, &body); !ok {
		return
	}
	switch body.Format {
	case "", "binary", "json":
	case encodingAvro, encodingJSONSchema, encodingProtobuf:
		if g.cfg.Schemas == nil {
			writeError(w, http.StatusUnprocessableEntity, codeInvalidConsumer,
				fmt.Sprintf("format %q needs the schema registry, which is not configured on this node", body.Format))
			return
		}
	default:
		writeError(w, http.StatusUnprocessableEntity, codeInvalidConsumer,
			fmt.Sprintf("format %q is not supported; use json, binary, avro, jsonschema or protobuf", body.Format))
		return
	}
	autoCommit := true // REST Proxy's default
	if len(body.AutoCommit) > 0 {
		v, _, err := configValue(body.AutoCommit)
		if b, perr := strconv.ParseBool(v); err == nil && perr == nil {
			autoCommit = b
		} else {
			writeError(w, http.StatusUnprocessableEntity, codeInvalidConsumer, "auto.commit.enable must be true or false")
			return
		}
	}
	groupName := pathParam(r, "group")
	info, err := g.groups.CreateConsumer(groupName, group.ConsumerOptions{
		Name: body.Name, Format: body.Format, AutoOffsetReset: body.AutoOffsetReset, AutoCommit: autoCommit,
		Isolation: cmp.Or(body.Isolation, defaultHTTPIsolation),
	})
	if err != nil {
		writeGroupError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, typeRestV2, consumerInstance{
		InstanceID: info.ID,
		BaseURI:    instanceURI(r, groupName, info.ID),
	})
}

// baseURL is how the client reached us, so base_uri works behind a proxy
// that sets X-Forwarded-Proto/Host.
// instanceURI is where an instance's routes are, its names escaped so
// that pathParam gives them back as they are.
func instanceURI(r *http.Request, groupName, id string) string {
	return baseURL(r) + "/consumers/" + url.PathEscape(groupName) + "/instances/" + url.PathEscape(id)
}

func baseURL(r *http.Request) string {
	scheme, host := "http", r.Host
	if r.TLS != nil {
		scheme = "https"
	}
	if p := r.Header.Get("X-Forwarded-Proto"); p != "" {
		scheme = p
	}
	if h := r.Header.Get("X-Forwarded-Host"); h != "" {
		host = h
	}
	return scheme + "://" + host
}

func instanceParams(r *http.Request) (string, string) {
	return pathParam(r, "group"), pathParam(r, "instance")
}

// deleteConsumer serves DELETE /consumers/{group}/instances/{instance}.
//
//	@Summary	Delete a consumer instance (it commits first with auto commit, then leaves the group)
//	@Tags		consumers
//	@Produce	json
//	@Param		group		path	string	true	"group id"
//	@Param		instance	path	string	true	"instance id"
//	@Success	204			"deleted"
//	@Failure	404			{object}	errorBody	"40403: no such consumer instance"
//	@Failure	500			{object}	errorBody	"50002: the final commit failed"
//	@Failure	503			{object}	errorBody	"50302: consumer groups are not enabled; 50301: shutting down"
//	@Router		/consumers/{group}/instances/{instance} [delete]
func (g *Gateway) deleteConsumer(w http.ResponseWriter, r *http.Request) {
	groupName, id := instanceParams(r)
	if err := g.groups.DeleteConsumer(r.Context(), groupName, id); err != nil {
		writeGroupError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

type subscriptionBody struct {
	Topics []string `json:"topics"`
	// TopicPattern is a regular expression matched against whole topic
	// names that exist now.
	TopicPattern string `json:"topic_pattern"`
}

// subscriptionAnswer is GET …/subscription's answer.
type subscriptionAnswer struct {
	Topics []string `json:"topics"`
}

// subscribe serves POST …/subscription. A topic_pattern is matched against
// the topics that exist now (not re-evaluated as topics are created).
//
//	@Summary	Subscribe a consumer instance to topics, or to the topics matching a pattern now
//	@Tags		consumers
//	@Accept		application/vnd.kafka.v2+json,json
//	@Produce	json
//	@Param		group		path	string				true	"group id"
//	@Param		instance	path	string				true	"instance id"
//	@Param		body		body	subscriptionBody	true	"topics or topic_pattern"
//	@Success	204			"subscribed"
//	@Failure	400			{object}	errorBody	"40001: the body is missing or not JSON"
//	@Failure	404			{object}	errorBody	"40403: no such consumer instance"
//	@Failure	413			{object}	errorBody	"41301: the body is over the request limit"
//	@Failure	415			{object}	errorBody	"41501: the content type is not accepted"
//	@Failure	422			{object}	errorBody	"42204: topic_pattern is not a valid regular expression"
//	@Failure	503			{object}	errorBody	"50302: consumer groups are not enabled; 50301: shutting down"
//	@Router		/consumers/{group}/instances/{instance}/subscription [post]
func (g *Gateway) subscribe(w http.ResponseWriter, r *http.Request) {
	var body subscriptionBody
	if present, ok := decodeRestBody(w, r, &body); !ok {
		return
	} else if !present {
		writeError(w, http.StatusBadRequest, codeMalformed, `the body must be {"topics":[…]} or {"topic_pattern":"…"}`)
		return
	}
	topics := body.Topics
	if body.TopicPattern != "" {
		re, err := regexp.Compile("^(?:" + body.TopicPattern + ")$")
		if err != nil {
			writeError(w, http.StatusUnprocessableEntity, codeInvalidConsumer, "topic_pattern: "+err.Error())
			return
		}
		for _, t := range g.broker.Topics() {
			if re.MatchString(t) && t != group.OffsetsTopic {
				topics = append(topics, t)
			}
		}
	}
	groupName, id := instanceParams(r)
	if err := g.groups.Subscribe(groupName, id, topics); err != nil {
		writeGroupError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// subscription serves GET …/subscription.
//
//	@Summary	A consumer instance's subscribed topics
//	@Tags		consumers
//	@Produce	application/vnd.kafka.v2+json,json
//	@Param		group		path		string	true	"group id"
//	@Param		instance	path		string	true	"instance id"
//	@Success	200			{object}	subscriptionAnswer
//	@Failure	404			{object}	errorBody	"40403: no such consumer instance"
//	@Failure	503			{object}	errorBody	"50302: consumer groups are not enabled"
//	@Router		/consumers/{group}/instances/{instance}/subscription [get]
func (g *Gateway) subscription(w http.ResponseWriter, r *http.Request) {
	groupName, id := instanceParams(r)
	info, err := g.groups.Consumer(groupName, id)
	if err != nil {
		writeGroupError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, typeRestV2, subscriptionAnswer{Topics: info.Topics})
}

// unsubscribe serves DELETE …/subscription.
//
//	@Summary	Unsubscribe a consumer instance from all topics
//	@Tags		consumers
//	@Produce	json
//	@Param		group		path	string	true	"group id"
//	@Param		instance	path	string	true	"instance id"
//	@Success	204			"unsubscribed"
//	@Failure	404			{object}	errorBody	"40403: no such consumer instance"
//	@Failure	503			{object}	errorBody	"50302: consumer groups are not enabled; 50301: shutting down"
//	@Router		/consumers/{group}/instances/{instance}/subscription [delete]
func (g *Gateway) unsubscribe(w http.ResponseWriter, r *http.Request) {
	groupName, id := instanceParams(r)
	if err := g.groups.Unsubscribe(r.Context(), groupName, id); err != nil {
		writeGroupError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

type restPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

// assignmentsAnswer is GET …/assignments's answer.
type assignmentsAnswer struct {
	Partitions []restPartition `json:"partitions"`
}

// assignments serves GET …/assignments.
//
//	@Summary	The partitions the group assigned to a consumer instance
//	@Tags		consumers
//	@Produce	application/vnd.kafka.v2+json,json
//	@Param		group		path		string	true	"group id"
//	@Param		instance	path		string	true	"instance id"
//	@Success	200			{object}	assignmentsAnswer
//	@Failure	404			{object}	errorBody	"40403: no such consumer instance"
//	@Failure	503			{object}	errorBody	"50302: consumer groups are not enabled"
//	@Router		/consumers/{group}/instances/{instance}/assignments [get]
func (g *Gateway) assignments(w http.ResponseWriter, r *http.Request) {
	groupName, id := instanceParams(r)
	info, err := g.groups.Consumer(groupName, id)
	if err != nil {
		writeGroupError(w, err)
		return
	}
	out := []restPartition{}
	for _, tps := range info.Assignment {
		for _, p := range tps.Partitions {
			out = append(out, restPartition{Topic: tps.Topic, Partition: p})
		}
	}
	writeJSON(w, http.StatusOK, typeRestV2, assignmentsAnswer{Partitions: out})
}

// restRecord is one consumed record: REST Proxy v2's fields plus the
// timestamp and headers. In the binary format key, value and header values
// are base64; in the json format key and value are the JSON the record
// holds (text that is not JSON becomes a JSON string, other bytes a base64
// string) and header values are strings. In the schema formats (avro,
// jsonschema, protobuf) key and value are decoded through the registry.
type restRecord struct {
	Topic string          `json:"topic"`
	Key   json.RawMessage `json:"key"`
	Value json.RawMessage `json:"value"`
	// KeyEncoding and ValueEncoding appear in the schema formats only,
	// for a key or value that did not decode (not wire format, an unknown
	// schema or one of another type, bytes the schema refuses): "base64",
	// the bytes as the binary format gives them. Confluent's REST Proxy
	// fails the whole poll there instead and stays stuck on the record.
	KeyEncoding   string `json:"key_encoding,omitempty" enums:"base64"`
	ValueEncoding string `json:"value_encoding,omitempty" enums:"base64"`
	Partition     int32  `json:"partition"`
	Offset        int64  `json:"offset"`
	Timestamp     int64  `json:"timestamp"`
	TimestampType string `json:"timestamp_type" enums:"CreateTime,LogAppendTime"`
	// Headers is always present, [] when the record has none.
	Headers []restHeader `json:"headers"`
}

type restHeader struct {
	Key   string  `json:"key"`
	Value *string `json:"value"`
}

func toRestRecord(rec group.ConsumedRecord, binary bool) restRecord {
	out := restRecord{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset, Timestamp: rec.Timestamp,
		TimestampType: "CreateTime", Headers: make([]restHeader, 0, len(rec.Headers))}
	if rec.TimestampType == 1 {
		out.TimestampType = "LogAppendTime"
	}
	if binary {
		out.Key, out.Value = base64JSON(rec.Key), base64JSON(rec.Value)
	} else {
		out.Key, _ = encodeBytes(rec.Key)
		out.Value, _ = encodeBytes(rec.Value)
	}
	for _, h := range rec.Headers {
		rh := restHeader{Key: h.Key}
		if h.Value != nil {
			v := string(h.Value)
			if binary {
				v = base64.StdEncoding.EncodeToString(h.Value)
			}
			rh.Value = &v
		}
		out.Headers = append(out.Headers, rh)
	}
	return out
}

func base64JSON(b []byte) json.RawMessage {
	if b == nil {
		return json.RawMessage("null")
	}
	s, _ := json.Marshal(base64.StdEncoding.EncodeToString(b))
	return s
}

// acceptFormat reads the records format from Accept: binary, json, or ""
// when the client accepts anything.
func acceptFormat(r *http.Request) (string, bool) {
	accept := r.Header.Get("Accept")
	if accept == "" {
		return "", true
	}
	for _, part := range strings.Split(accept, ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mt {
		case typeRestBinary:
			return "binary", true
		case typeRestJSON:
			return "json", true
		case typeRestAvro:
			return encodingAvro, true
		case typeRestJSONSchema:
			return encodingJSONSchema, true
		case typeRestProtobuf:
			return encodingProtobuf, true
		case "*/*", typeJSON, typeRestV2, "application/*":
			return "", true
		}
	}
	return "", false
}

// consumeRecords serves GET …/records?timeout=&max_bytes=.
//
//	@Summary		Poll records for a consumer instance (REST Proxy v2)
//	@Description	Waits up to timeout ms for records of the assigned partitions. Accept must match the instance's format: application/vnd.kafka.binary.v2+json (keys, values and header values base64) or application/vnd.kafka.json.v2+json (JSON as stored; other text a string, other bytes base64), or for a schema format application/vnd.kafka.{avro,jsonschema,protobuf}.v2+json (keys and values in Confluent's wire format decoded through the registry; one that does not decode stays base64 with key_encoding/value_encoding "base64"); */* or application/json take the instance's.
//	@Tags			consumers
//	@Produce		application/vnd.kafka.json.v2+json,application/vnd.kafka.binary.v2+json,application/vnd.kafka.avro.v2+json,application/vnd.kafka.jsonschema.v2+json,application/vnd.kafka.protobuf.v2+json,json
//	@Param			group		path		string	true	"group id"
//	@Param			instance	path		string	true	"instance id"
//	@Param			timeout		query		integer	false	"long-poll up to this many ms (default 1000; capped by MaxFetchWait)"	minimum(0)
//	@Param			max_bytes	query		integer	false	"at most about this many bytes (default 1 MiB; capped by MaxFetchBytes)"	minimum(1)
//	@Success		200			{array}		restRecord
//	@Failure		400			{object}	errorBody	"40002: timeout or max_bytes is not valid"
//	@Failure		404			{object}	errorBody	"40403: no such consumer instance"
//	@Failure		406			{object}	errorBody	"40601: Accept does not match the instance's format"
//	@Failure		409			{object}	errorBody	"40903: not subscribed; 40905: no committed offset and auto.offset.reset is none"
//	@Failure		500			{object}	errorBody	"50001/50002: internal or storage error"
//	@Failure		503			{object}	errorBody	"50302: consumer groups are not enabled; 50301: shutting down"
//	@Router			/consumers/{group}/instances/{instance}/records [get]
func (g *Gateway) consumeRecords(w http.ResponseWriter, r *http.Request) {
	groupName, id := instanceParams(r)
	info, err := g.groups.Consumer(groupName, id)
	if err != nil {
		writeGroupError(w, err)
		return
	}
	want, ok := acceptFormat(r)
	if !ok || (want != "" && want != info.Format) {
		writeError(w, http.StatusNotAcceptable, codeFormatMismatch, fmt.Sprintf(
			"the requested embedded data format does not match the deserializer for this consumer instance (%s); accept %s",
			info.Format, restRecordsType(info.Format)))
		return
	}
	q := r.URL.Query()
	timeoutMs, err := intParam(q.Get("timeout"), int(defaultConsumerTimeout.Milliseconds()), 0, int(g.cfg.MaxFetchWait.Milliseconds()))
	if err != nil {
		writeError(w, http.StatusBadRequest, codeBadParam, "timeout: "+err.Error())
		return
	}
	maxBytes, err := intParam(q.Get("max_bytes"), defaultConsumerMaxBytes, 1, g.cfg.MaxFetchBytes)
	if err != nil {
		writeError(w, http.StatusBadRequest, codeBadParam, "max_bytes: "+err.Error())
		return
	}
	recs, err := g.groups.Poll(r.Context(), groupName, id, group.PollOptions{
		MaxBytes: maxBytes, Wait: time.Duration(timeoutMs) * time.Millisecond,
	})
	if err != nil {
		writeGroupError(w, err)
		return
	}
	out := make([]restRecord, 0, len(recs))
	typ, schemaFormat := readFormats[info.Format]
	budget := maxAvroAnswerText
	for _, rec := range recs {
		if schemaFormat {
			out = append(out, g.toSchemaRestRecord(r, rec, typ, &budget))
			continue
		}
		out = append(out, toRestRecord(rec, info.Format == "binary"))
	}
	writeJSON(w, http.StatusOK, restRecordsType(info.Format), out)
}

// toSchemaRestRecord renders a record for a consumer of a schema format:
// key and value decoded through the registry as reads with ?format= do,
// within what is left of budget; what does not decode stays base64.
// Header values are strings, as in the json format.
func (g *Gateway) toSchemaRestRecord(r *http.Request, rec group.ConsumedRecord, typ string, budget *int) restRecord {
	out := toRestRecord(rec, false)
	decode := func(b []byte, field *json.RawMessage, encoding *string) {
		if b == nil {
			*field = json.RawMessage("null")
			return
		}
		if text, _, ok := g.renderWire(r, typ, b, budget); ok {
			*field = text
			return
		}
		*field, *encoding = base64JSON(b), encodingBase64
	}
	decode(rec.Key, &out.Key, &out.KeyEncoding)
	decode(rec.Value, &out.Value, &out.ValueEncoding)
	return out
}

func restRecordsType(format string) string {
	switch format {
	case "json":
		return typeRestJSON
	case encodingAvro:
		return typeRestAvro
	case encodingJSONSchema:
		return typeRestJSONSchema
	case encodingProtobuf:
		return typeRestProtobuf
	}
	return typeRestBinary
}

type commitBody struct {
	Offsets []struct {
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
		// Offset is the last record consumed; offset+1 is stored.
		Offset   int64  `json:"offset"`
		Metadata string `json:"metadata"`
	} `json:"offsets"`
}

// committedOffsetsBody is GET …/offsets's optional body.
type committedOffsetsBody struct {
	Partitions []restPartition `json:"partitions"`
}

// committedOffsetsAnswer is GET …/offsets's answer.
type committedOffsetsAnswer struct {
	Offsets []group.CommittedOffset `json:"offsets"`
}

// commitOffsets serves POST …/offsets: the given offsets (each the last
// record consumed; offset+1 is stored), or with no body every position the
// instance has consumed to.
//
//	@Summary		Commit offsets for a consumer instance
//	@Description	Each offset names the last record consumed (offset+1 is stored, as REST Proxy does). With no body, every position the instance has consumed to is committed.
//	@Tags			consumers
//	@Accept			application/vnd.kafka.v2+json,json
//	@Produce		json
//	@Param			group		path	string		true	"group id"
//	@Param			instance	path	string		true	"instance id"
//	@Param			body		body	commitBody	false	"offsets to commit"
//	@Success		200			"committed"
//	@Failure		400			{object}	errorBody	"40001: the body is not JSON"
//	@Failure		404			{object}	errorBody	"40403: no such consumer instance"
//	@Failure		409			{object}	errorBody	"40903: the instance is not in the group now (illegal state)"
//	@Failure		413			{object}	errorBody	"41301: the body is over the request limit"
//	@Failure		415			{object}	errorBody	"41501: the content type is not accepted"
//	@Failure		422			{object}	errorBody	"42204: a negative offset"
//	@Failure		500			{object}	errorBody	"50002: the commit was rejected"
//	@Failure		503			{object}	errorBody	"50302: consumer groups are not enabled; 50301: shutting down"
//	@Router			/consumers/{group}/instances/{instance}/offsets [post]
func (g *Gateway) commitOffsets(w http.ResponseWriter, r *http.Request) {
	var body commitBody
	present, ok := decodeRestBody(w, r, &body)
	if !ok {
		return
	}
	var offsets []group.CommitOffset
	if present && body.Offsets != nil {
		offsets = []group.CommitOffset{}
		for _, o := range body.Offsets {
			if o.Offset < 0 {
				writeError(w, http.StatusUnprocessableEntity, codeInvalidConsumer,
					fmt.Sprintf("%s-%d: offset %d is negative", o.Topic, o.Partition, o.Offset))
				return
			}
			offsets = append(offsets, group.CommitOffset{Topic: o.Topic, Partition: o.Partition, Offset: o.Offset + 1, Metadata: o.Metadata})
		}
	}
	groupName, id := instanceParams(r)
	if err := g.groups.CommitConsumer(r.Context(), groupName, id, offsets); err != nil {
		writeGroupError(w, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// committedOffsets serves GET …/offsets with {"partitions":[…]} (or no
// body: every partition assigned to the instance).
//
//	@Summary		Committed offsets of a consumer instance's group
//	@Description	For the partitions in the body (a GET body, as REST Proxy takes it), or with none every partition assigned to the instance; -1 where nothing is committed.
//	@Tags			consumers
//	@Accept			application/vnd.kafka.v2+json,json
//	@Produce		application/vnd.kafka.v2+json,json
//	@Param			group		path		string					true	"group id"
//	@Param			instance	path		string					true	"instance id"
//	@Param			body		body		committedOffsetsBody	false	"partitions to report"
//	@Success		200			{object}	committedOffsetsAnswer
//	@Failure		400			{object}	errorBody	"40001: the body is not JSON"
//	@Failure		404			{object}	errorBody	"40403: no such consumer instance"
//	@Failure		413			{object}	errorBody	"41301: the body is over the request limit"
//	@Failure		415			{object}	errorBody	"41501: the content type is not accepted"
//	@Failure		503			{object}	errorBody	"50302: consumer groups are not enabled"
//	@Router			/consumers/{group}/instances/{instance}/offsets [get]
func (g *Gateway) committedOffsets(w http.ResponseWriter, r *http.Request) {
	var body committedOffsetsBody
	if _, ok := decodeRestBody(w, r, &body); !ok {
		return
	}
	var parts []group.TopicPartitions
	for _, p := range body.Partitions {
		parts = append(parts, group.TopicPartitions{Topic: p.Topic, Partitions: []int32{p.Partition}})
	}
	groupName, id := instanceParams(r)
	offsets, err := g.groups.ConsumerCommitted(groupName, id, parts)
	if err != nil {
		writeGroupError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, typeRestV2, committedOffsetsAnswer{Offsets: offsets})
}
