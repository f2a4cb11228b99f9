package api

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/ferry-mq/ferry/server/group"
)

// GET /kafka/{topic}/stream?group=G: a live feed as server-sent events.
// The stream is a consumer instance of group G in the coordinator (so it
// shares the topic's partitions with G's other members, Kafka or HTTP).
//
// Events:
//
//	event: consumer   data: {"group","instance_id","base_uri"}   first, once
//	event: record     id: <partition>:<offset>  data: the record as GET …/records (json format) returns it
//	: keepalive                                                  a comment every heartbeat_ms without records
//
// Commits: every commit_interval_ms (default 5000) the positions sent so
// far are committed, and once more when the stream ends; with
// commit_interval_ms=0 nothing is committed automatically and the client
// acknowledges by POSTing {"offsets":[…]} (last record handled) to
// <base_uri>/offsets, the REST Proxy commit.
//
// Parameters: from=latest|earliest (where a partition without a commit
// starts; default latest), max_duration (Go duration or seconds; default
// 5m, at most 1h) after which the server ends the stream (EventSource
// reconnects and resumes from the committed offsets), heartbeat_ms
// (default 15000). The server's write timeout is extended before each
// write, so the stream outlives it.

const (
	defaultStreamDuration  = 5 * time.Minute
	maxStreamDuration      = time.Hour
	defaultStreamHeartbeat = 15 * time.Second
	defaultStreamCommit    = 5 * time.Second
	streamWriteTimeout     = 30 * time.Second
)

type streamParams struct {
	group     string
	from      string
	duration  time.Duration
	heartbeat time.Duration
	commit    time.Duration
	isolation string
}

func parseStreamParams(r *http.Request) (streamParams, error) {
	q := r.URL.Query()
	p := streamParams{group: q.Get("group"), from: q.Get("from"), duration: defaultStreamDuration,
		heartbeat: defaultStreamHeartbeat, commit: defaultStreamCommit}
	if p.group == "" {
		return p, fmt.Errorf("group: a consumer group is required (?group=…)")
	}
	switch p.from {
	case "":
		p.from = "latest"
	case "earliest", "latest":
	default:
		return p, fmt.Errorf("from %q: want earliest or latest", p.from)
	}
	if v := q.Get("max_duration"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			secs, serr := strconv.Atoi(v)
			if serr != nil {
				return p, fmt.Errorf("max_duration %q: want a duration like 30s or seconds", v)
			}
			d = time.Duration(secs) * time.Second
		}
		if d <= 0 || d > maxStreamDuration {
			return p, fmt.Errorf("max_duration %v is outside (0, %v]", d, maxStreamDuration)
		}
		p.duration = d
	}
	hb, err := intParam(q.Get("heartbeat_ms"), int(defaultStreamHeartbeat.Milliseconds()), 100, int(time.Hour.Milliseconds()))
	if err != nil {
		return p, fmt.Errorf("heartbeat_ms: %v", err)
	}
	p.heartbeat = time.Duration(hb) * time.Millisecond
	cm, err := intParam(q.Get("commit_interval_ms"), int(defaultStreamCommit.Milliseconds()), 0, int(time.Hour.Milliseconds()))
	if err != nil {
		return p, fmt.Errorf("commit_interval_ms: %v", err)
	}
	p.commit = time.Duration(cm) * time.Millisecond
	if _, err := isolationParam(q.Get("isolation")); err != nil {
		return p, err
	}
	p.isolation = cmp.Or(q.Get("isolation"), defaultHTTPIsolation)
	return p, nil
}

// stream serves GET /kafka/{topic}/stream.
//
//	@Summary		Live feed of a topic as server-sent events, as a member of a consumer group
//	@Description	Events: "consumer" first, once, with {"group","instance_id","base_uri"}; then "record" events (id <partition>:<offset>) whose data is a record as GET /consumers/…/records returns it in the json format; a ": keepalive" comment every heartbeat_ms without records; "error" with an Error body if polling fails. Every commit_interval_ms the positions sent are committed (and once more at the end); with commit_interval_ms=0 the client commits by POSTing {"offsets":[…]} to <base_uri>/offsets. The server ends the stream after max_duration; EventSource reconnects and resumes from the committed offsets.
//	@Tags			gateway
//	@Produce		text/event-stream,json
//	@Param			topic				path		string	true	"topic name"
//	@Param			group				query		string	true	"consumer group to join"
//	@Param			from				query		string	false	"where a partition without a commit starts (default latest)"	Enums(earliest, latest)
//	@Param			max_duration		query		string	false	"end the stream after this long: a Go duration (30s, 5m) or seconds; default 5m, at most 1h"
//	@Param			heartbeat_ms		query		integer	false	"keepalive interval (default 15000)"	minimum(100)
//	@Param			commit_interval_ms	query		integer	false	"auto-commit interval; 0: the client commits (default 5000)"	minimum(0)
//	@Param			isolation			query		string	false	"read_committed (default): skip aborted transactions' records, stop at the last stable offset; or read_uncommitted"	Enums(read_uncommitted, read_committed)
//	@Success		200					{string}	string	"text/event-stream"
//	@Failure		400					{object}	errorBody	"40002: a query parameter is not valid"
//	@Failure		404					{object}	errorBody	"40401: no such topic"
//	@Failure		409					{object}	errorBody	"40904: the group's members use another protocol"
//	@Failure		503					{object}	errorBody	"50302: consumer groups are not enabled; 50301: shutting down"
//	@Router			/kafka/{topic}/stream [get]
func (g *Gateway) stream(w http.ResponseWriter, r *http.Request) {
	topicName := pathParam(r, "topic")
	params, err := parseStreamParams(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, codeBadParam, err.Error())
		return
	}
	if _, err := g.broker.PartitionCountInCluster(topicName); err != nil {
		writeCoreError(w, err)
		return
	}
	info, err := g.groups.CreateConsumer(params.group, group.ConsumerOptions{Format: "json", AutoOffsetReset: params.from,
		Isolation: params.isolation})
	if err != nil {
		writeGroupError(w, err)
		return
	}
	// The instance goes with the stream; a fresh context so the final
	// commit and leave happen even though the request's is cancelled.
	defer g.groups.DeleteConsumer(context.Background(), params.group, info.ID)
	if err := g.groups.Subscribe(params.group, info.ID, []string{topicName}); err != nil {
		writeGroupError(w, err)
		return
	}
	s := &sseWriter{w: w, rc: http.NewResponseController(w)}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	hello, _ := json.Marshal(map[string]string{"group": params.group, "instance_id": info.ID,
		"base_uri": instanceURI(r, params.group, info.ID)})
	if s.event("consumer", "", hello) != nil {
		return
	}
	g.pumpStream(r.Context(), s, params, info.ID)
}

// pumpStream polls and writes events until the client goes, the duration
// ends or a write fails.
func (g *Gateway) pumpStream(ctx context.Context, s *sseWriter, p streamParams, id string) {
	end := time.Now().Add(p.duration)
	lastCommit, lastWrite := time.Now(), time.Now()
	commit := func() {
		if p.commit > 0 {
			if err := g.groups.CommitConsumer(context.Background(), p.group, id, nil); err != nil {
				g.logger.Warn("stream commit failed", "group", p.group, "instance", id, "err", err)
			}
			lastCommit = time.Now()
		}
	}
	defer commit()
	for ctx.Err() == nil && time.Now().Before(end) {
		wait := min(p.heartbeat, time.Until(end))
		if p.commit > 0 {
			wait = min(wait, max(time.Until(lastCommit.Add(p.commit)), 0))
		}
		recs, err := g.groups.Poll(ctx, p.group, id, group.PollOptions{MaxBytes: defaultConsumerMaxBytes, Wait: wait})
		if err != nil {
			if ctx.Err() == nil {
				data, _ := json.Marshal(errorBody{ErrorCode: codeInternal, Message: err.Error()})
				s.event("error", "", data)
			}
			return
		}
		for _, rec := range recs {
			data, _ := json.Marshal(toRestRecord(rec, false))
			if s.event("record", fmt.Sprintf("%d:%d", rec.Partition, rec.Offset), data) != nil {
				return
			}
			lastWrite = time.Now()
		}
		if time.Since(lastWrite) >= p.heartbeat {
			if s.comment("keepalive") != nil {
				return
			}
			lastWrite = time.Now()
		}
		if p.commit > 0 && time.Since(lastCommit) >= p.commit {
			commit()
		}
	}
}

// sseWriter writes server-sent events, extending the write deadline
// before each write and flushing after it.
type sseWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func (s *sseWriter) write(text string) error {
	s.rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	if _, err := fmt.Fprint(s.w, text); err != nil {
		return err
	}
	return s.rc.Flush()
}

func (s *sseWriter) event(name, id string, data []byte) error {
	text := "event: " + name + "\n"
	if id != "" {
		text += "id: " + id + "\n"
	}
	return s.write(text + "data: " + string(data) + "\n\n")
}

func (s *sseWriter) comment(c string) error { return s.write(": " + c + "\n\n") }
