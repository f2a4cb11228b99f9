package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/auth"
	"github.com/ferry-mq/ferry/server/records"
)

// Transactor writes records of several topics and partitions as one Kafka
// transaction: all of them become visible to read_committed readers, or
// none (server/txn.Transactor, in process).
type Transactor interface {
	Transact(ctx context.Context, recs []server.TopicRecord) ([]server.TopicOffset, error)
}

// txnBody is POST /kafka's body.
type txnBody struct {
	Records []txnRecord `json:"records"`
}

// txnRecord is one record of an all-or-nothing batch.
type txnRecord struct {
	Topic string `json:"topic" example:"orders"`
	// Partition is chosen from the key (Kafka's murmur2), or round robin
	// for a null key, when absent.
	Partition *int32 `json:"partition,omitempty"`
	// Key is any JSON: a JSON string is stored as its UTF-8 bytes, other
	// JSON as its text. Absent or null: a null key.
	Key json.RawMessage `json:"key,omitempty" swaggertype:"object"`
	// Value is encoded as Key is.
	Value json.RawMessage `json:"value,omitempty" swaggertype:"object"`
	// Timestamp in ms since the epoch; the broker's time when absent.
	Timestamp *int64            `json:"timestamp,omitempty"`
	Headers   map[string]string `json:"headers,omitempty"`
}

// txnOffsets is POST /kafka's answer: each record's place, in request
// order.
type txnOffsets struct {
	Offsets []server.TopicOffset `json:"offsets"`
}

// txnUnkeyed spreads the null-key records of batches over partitions.
var txnUnkeyed atomic.Uint32

// produceTransaction serves POST /kafka.
//
//	@Summary		Produce records to several topics and partitions, all or nothing
//	@Description	One request is one Kafka transaction, written through the transaction coordinator by a transactional producer of this gateway: when it answers 200 every record is committed (read_committed readers see all of them, at the offsets answered); on any error the transaction is aborted and read_committed readers see none of them (read_uncommitted readers may see the aborted records). Every topic is checked (it exists, the partition exists, the principal may WRITE it) before anything is written. See docs/http-transactions.md.
//	@Tags			gateway
//	@Accept			json
//	@Produce		json
//	@Param			Idempotency-Key	header		string		false	"as on POST /kafka/{topic}: a retry with the same key and request within the window answers the original and writes nothing (docs/http-idempotency.md)"
//	@Param			body			body		txnBody		true	"records, each naming its topic"
//	@Success		200				{object}	txnOffsets
//	@Failure		400				{object}	errorBody	"40001: the body is not JSON of this shape, or has no records"
//	@Failure		403				{object}	errorBody	"40301: the principal may not WRITE one of the topics (nothing written); 40303: an internal topic"
//	@Failure		404				{object}	errorBody	"40401 no such topic, 40402 no such partition (nothing written)"
//	@Failure		413				{object}	errorBody	"41301: the body, the record count or a record is over the limit (a record a leader refuses aborts the transaction)"
//	@Failure		422				{object}	errorBody	"42201 invalid topic name, 42205 invalid record (the transaction was aborted)"
//	@Failure		503				{object}	errorBody	"50301: this node does not serve transactional batches, or is shutting down; 50302: fewer in-sync replicas than min.insync.replicas; 50306: a partition has no live leader, or the transaction coordinator is not available (the transaction was aborted); 50303: the commit was sent and not confirmed in time: its outcome is unknown, read the partitions. With Retry-After"
//	@Header			503				{string}	Retry-After	"seconds to wait before retrying"
//	@Router			/kafka [post]
func (g *Gateway) produceTransaction(w http.ResponseWriter, r *http.Request) {
	if g.cfg.Transactor == nil {
		writeError(w, http.StatusServiceUnavailable, codeUnavailable, "this node does not serve transactional batches")
		return
	}
	var body txnBody
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(&body); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeCoreError(w, err)
			return
		}
		writeError(w, http.StatusBadRequest, codeMalformed, "the body is not a JSON object of records: "+err.Error())
		return
	}
	if len(body.Records) == 0 {
		writeError(w, http.StatusBadRequest, codeMalformed, `the body has no records: send {"records":[{"topic":…,"value":…},…]}`)
		return
	}
	if len(body.Records) > g.cfg.MaxRecordsPerRequest {
		writeError(w, http.StatusRequestEntityTooLarge, codeTooLarge,
			fmt.Sprintf("%d records is over the %d records a request may hold", len(body.Records), g.cfg.MaxRecordsPerRequest))
		return
	}
	recs, ok := g.txnRecords(w, r, body.Records)
	if !ok {
		return
	}
	offsets, err := g.cfg.Transactor.Transact(r.Context(), recs)
	if err != nil {
		writeCoreError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, typeJSON, txnOffsets{Offsets: offsets})
}

// txnRecords checks every record's topic and partition, and the
// principal's WRITE on each topic, before anything is written; false when
// it answered.
func (g *Gateway) txnRecords(w http.ResponseWriter, r *http.Request, in []txnRecord) ([]server.TopicRecord, bool) {
	counts := map[string]int32{}
	leaderless := map[string]map[int32]bool{}
	out := make([]server.TopicRecord, len(in))
	unkeyed := txnUnkeyed.Add(1)
	for i := range in {
		rec := &in[i]
		n, seen := counts[rec.Topic]
		if !seen {
			if err := server.ValidateTopicName(rec.Topic); err != nil {
				writeCoreError(w, fmt.Errorf("record %d: %w", i, err))
				return nil, false
			}
			if err := server.RefuseInternalTopic(rec.Topic, "produce to"); err != nil {
				writeCoreError(w, err)
				return nil, false
			}
			if !g.may(r, auth.OpWrite, auth.Resource{Type: auth.ResourceTopic, Name: rec.Topic}) {
				g.deny(w, r, fmt.Sprintf("WRITE on topic %s is not allowed", rec.Topic))
				return nil, false
			}
			var err error
			if n, err = g.broker.PartitionCountInCluster(rec.Topic); err != nil {
				writeCoreError(w, err)
				return nil, false
			}
			counts[rec.Topic] = n
			if info, err := g.broker.DescribeTopic(rec.Topic); err == nil {
				for _, pi := range info.Partitions {
					if pi.Leader < 0 {
						if leaderless[rec.Topic] == nil {
							leaderless[rec.Topic] = map[int32]bool{}
						}
						leaderless[rec.Topic][pi.Partition] = true
					}
				}
			}
		}
		key, value := jsonBytes(rec.Key), jsonBytes(rec.Value)
		p := int32(0)
		switch {
		case rec.Partition != nil:
			p = *rec.Partition
			if p < 0 || p >= n {
				writeCoreError(w, fmt.Errorf("%w: record %d: %s has no partition %d (it has %d)", server.ErrUnknownPartition, i, rec.Topic, p, n))
				return nil, false
			}
		case key != nil:
			p = records.PartitionForKey(key, n)
		default:
			p = int32(unkeyed % uint32(n))
		}
		if leaderless[rec.Topic][p] {
			writeCoreError(w, fmt.Errorf("%w: record %d: %s-%d has no live leader; nothing was written, retry shortly", server.ErrLeaderNotAvailable, i, rec.Topic, p))
			return nil, false
		}
		out[i] = server.TopicRecord{Topic: rec.Topic, Partition: p, Record: records.Record{Key: key, Value: value}}
		if rec.Timestamp != nil {
			if *rec.Timestamp < 0 {
				writeCoreError(w, fmt.Errorf("%w: record %d: timestamp %d is negative", server.ErrInvalidTimestamp, i, *rec.Timestamp))
				return nil, false
			}
			out[i].Record.Timestamp = *rec.Timestamp
		}
		for k, v := range rec.Headers {
			out[i].Record.Headers = append(out[i].Record.Headers, records.Header{Key: k, Value: []byte(v)})
		}
	}
	return out, true
}

// jsonBytes is how a record's key or value is stored: a JSON string as
// its UTF-8 bytes, null or absent as nil, other JSON as its text.
func jsonBytes(raw json.RawMessage) []byte {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return []byte(s)
		}
	}
	return append([]byte(nil), raw...)
}
