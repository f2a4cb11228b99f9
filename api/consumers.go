package api

// Confluent REST Proxy v2 consumers over the group coordinator.
//
//	POST   /consumers/{group}                                  create an instance
//	DELETE /consumers/{group}/instances/{instance}             delete it (commits with auto commit)
//	POST   /consumers/{group}/instances/{instance}/subscription {"topics":[…]} or {"topic_pattern":"…"}
//	GET    …/subscription, DELETE …/subscription, GET …/assignments
//	GET    …/records?timeout=&max_bytes=                       Accept: application/vnd.kafka.{json,binary}.v2+json
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
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/ferry-mq/ferry/server/group"
)

// REST Proxy's error codes for consumers.
const (
	codeConsumerNotFound    = 40403
	codeFormatMismatch      = 40601
	codeConsumerExists      = 40902
	codeIllegalState        = 40903
	codeIncompatibleGroup   = 40904
	codeInvalidConsumer     = 42204
	codeNoOffsetReset       = 40904 + 1 // 40905: no committed offset and auto.offset.reset none
	codeGroupsUnavailable   = 50302
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
	Name            string          `json:"name"`
	Format          string          `json:"format"`
	AutoOffsetReset string          `json:"auto.offset.reset"`
	AutoCommit      json.RawMessage `json:"auto.commit.enable"`
}

// createConsumer serves POST /consumers/{group}.
func (g *Gateway) createConsumer(w http.ResponseWriter, r *http.Request) {
	var body createConsumerBody
	if _, ok := decodeRestBody(w, r, &body); !ok {
		return
	}
	switch body.Format {
	case "", "binary", "json":
	default:
		writeError(w, http.StatusUnprocessableEntity, codeInvalidConsumer,
			fmt.Sprintf("format %q is not supported; use json or binary", body.Format))
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
	groupName := chi.URLParam(r, "group")
	info, err := g.groups.CreateConsumer(groupName, group.ConsumerOptions{
		Name: body.Name, Format: body.Format, AutoOffsetReset: body.AutoOffsetReset, AutoCommit: autoCommit,
	})
	if err != nil {
		writeGroupError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, typeRestV2, map[string]string{
		"instance_id": info.ID,
		"base_uri":    baseURL(r) + "/consumers/" + groupName + "/instances/" + info.ID,
	})
}

// baseURL is how the client reached us, so base_uri works behind a proxy
// that sets X-Forwarded-Proto/Host.
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
	return chi.URLParam(r, "group"), chi.URLParam(r, "instance")
}

// deleteConsumer serves DELETE /consumers/{group}/instances/{instance}.
func (g *Gateway) deleteConsumer(w http.ResponseWriter, r *http.Request) {
	groupName, id := instanceParams(r)
	if err := g.groups.DeleteConsumer(r.Context(), groupName, id); err != nil {
		writeGroupError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

type subscriptionBody struct {
	Topics       []string `json:"topics"`
	TopicPattern string   `json:"topic_pattern"`
}

// subscribe serves POST …/subscription. A topic_pattern is matched against
// the topics that exist now (not re-evaluated as topics are created).
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
func (g *Gateway) subscription(w http.ResponseWriter, r *http.Request) {
	groupName, id := instanceParams(r)
	info, err := g.groups.Consumer(groupName, id)
	if err != nil {
		writeGroupError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, typeRestV2, map[string][]string{"topics": info.Topics})
}

// unsubscribe serves DELETE …/subscription.
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

// assignments serves GET …/assignments.
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
	writeJSON(w, http.StatusOK, typeRestV2, map[string][]restPartition{"partitions": out})
}

// restRecord is one consumed record: REST Proxy v2's fields plus the
// timestamp and headers. In the binary format key, value and header values
// are base64; in the json format key and value are the JSON the record
// holds (text that is not JSON becomes a JSON string, other bytes a base64
// string) and header values are strings.
type restRecord struct {
	Topic         string          `json:"topic"`
	Key           json.RawMessage `json:"key"`
	Value         json.RawMessage `json:"value"`
	Partition     int32           `json:"partition"`
	Offset        int64           `json:"offset"`
	Timestamp     int64           `json:"timestamp"`
	TimestampType string          `json:"timestamp_type"`
	Headers       []restHeader    `json:"headers,omitempty"`
}

type restHeader struct {
	Key   string  `json:"key"`
	Value *string `json:"value"`
}

func toRestRecord(rec group.ConsumedRecord, binary bool) restRecord {
	out := restRecord{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset, Timestamp: rec.Timestamp,
		TimestampType: "CreateTime"}
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
		case "*/*", typeJSON, typeRestV2, "application/*":
			return "", true
		}
	}
	return "", false
}

// consumeRecords serves GET …/records?timeout=&max_bytes=.
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
	for _, rec := range recs {
		out = append(out, toRestRecord(rec, info.Format == "binary"))
	}
	writeJSON(w, http.StatusOK, restRecordsType(info.Format), out)
}

func restRecordsType(format string) string {
	if format == "json" {
		return typeRestJSON
	}
	return typeRestBinary
}

type commitBody struct {
	Offsets []struct {
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
		Offset    int64  `json:"offset"`
		Metadata  string `json:"metadata"`
	} `json:"offsets"`
}

// commitOffsets serves POST …/offsets: the given offsets (each the last
// record consumed; offset+1 is stored), or with no body every position the
// instance has consumed to.
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
func (g *Gateway) committedOffsets(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Partitions []restPartition `json:"partitions"`
	}
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
	writeJSON(w, http.StatusOK, typeRestV2, map[string][]group.CommittedOffset{"offsets": offsets})
}
