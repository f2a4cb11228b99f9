package api

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/auth"
	"github.com/ferry-mq/ferry/server/records"
)

// The message browser: search a topic across its partitions (browse_scan.go
// scans, browse_filter.go filters, browse_cursor.go resumes), export what a
// search selects as JSON lines or CSV, and republish chosen records to
// another topic.

// searchAnswer is GET /kafka/{topic}/search's answer.
type searchAnswer struct {
	Topic string `json:"topic"`
	// Records are the matches, newest first (order=newest) or oldest
	// first, by timestamp, then partition and offset.
	Records []avroReadRecord `json:"records"`
	// Cursor continues the search where this answer stopped (pass it as
	// cursor= with the same filters and order); absent when done.
	Cursor   string       `json:"cursor,omitempty"`
	Progress scanProgress `json:"progress"`
} //	@name	SearchAnswer

// searchRecords serves GET /kafka/{topic}/search.
//
//	@Summary		Search a topic's records
//	@Description	Scans every partition of the topic, newest first (default) or oldest first, and returns the records matching every filter given: key (equal), value (substring of the bytes), header (name, or name=value; repeatable), json (a path into the value's JSON, optionally compared: `$.user.id == 42`, `user.id=42`, `$.tags[0] != "x"`, `$.user.name`), from/to (timestamps, inclusive; milliseconds or RFC 3339; the start is found through the time index). The scan is bounded by max_scan_records and max_scan_bytes (keys, values and headers after decompression); when the budget is spent, or limit matches are found, the answer carries a cursor that resumes exactly after the last record scanned: no record is scanned twice or skipped. Reads go through the node's consumer read path (any node of a cluster answers). decode=avro|jsonschema|protobuf decodes Confluent wire-format keys and values through the registry.
//	@Tags			browser
//	@Produce		json
//	@Param			topic				path		string	true	"topic name"
//	@Param			key					query		string	false	"the key equals this"
//	@Param			value				query		string	false	"the value contains this"
//	@Param			header				query		string	false	"name or name=value; repeat for several"
//	@Param			json				query		string	false	"JSON field filter, e.g. $.user.id == 42"
//	@Param			partitions			query		string	false	"only these partitions, e.g. 0,3,7 (default all; a topic of more than 500 partitions must name at most 500)"
//	@Param			from				query		string	false	"timestamp at least (ms or RFC 3339)"
//	@Param			to					query		string	false	"timestamp at most (ms or RFC 3339)"
//	@Param			order				query		string	false	"newest (default) or oldest"	Enums(newest,oldest)
//	@Param			limit				query		integer	false	"stop after this many matches (default 100, at most 1000)"	minimum(1)	maximum(1000)
//	@Param			max_scan_records	query		integer	false	"records to look at (default 10000, at most 1000000)"	minimum(1)	maximum(1000000)
//	@Param			max_scan_bytes		query		integer	false	"bytes to look at (default 16 MiB, at most 256 MiB)"	minimum(1)
//	@Param			cursor				query		string	false	"a previous answer's cursor"
//	@Param			decode				query		string	false	"avro, jsonschema, protobuf: decode wire-format keys and values through the registry"	Enums(avro,jsonschema,protobuf)
//	@Success		200					{object}	searchAnswer
//	@Failure		400					{object}	errorBody	"40002: a filter, the budget or the cursor is not valid"
//	@Failure		404					{object}	errorBody	"40401: no such topic"
//	@Failure		422					{object}	errorBody	"42205: a stored batch does not decode"
//	@Failure		503					{object}	errorBody	"50301: decode= without a registry; 50306: a partition has no live leader"
//	@Router			/kafka/{topic}/search [get]
func (g *Gateway) searchRecords(w http.ResponseWriter, r *http.Request) {
	topic := pathParam(r, "topic")
	format, typ, ok := g.wantsDecoding(w, r)
	if !ok {
		return
	}
	scan, err := g.newBrowseScan(r.Context(), topic, r.URL.Query(), false)
	if err != nil {
		writeBrowseError(w, err)
		return
	}
	ans := searchAnswer{Topic: topic, Records: []avroReadRecord{}}
	scan.emit = func(p int32, rec *records.Record) bool {
		ans.Records = append(ans.Records, avroReadRecord{readRecord: toReadRecord(topic, p, *rec)})
		return true
	}
	if err := scan.run(r.Context()); err != nil {
		writeBrowseError(w, err)
		return
	}
	sortRecords(ans.Records, scan.cur.newest)
	if format != "" {
		budget := maxAvroAnswerText
		for i := range ans.Records {
			rec := &ans.Records[i]
			rec.KeySchemaID = g.decodeAvroField(r, typ, format, &rec.Key, &rec.KeyEncoding, &budget)
			rec.ValueSchemaID = g.decodeAvroField(r, typ, format, &rec.Value, &rec.ValueEncoding, &budget)
		}
	}
	ans.Progress = scan.prog
	if !scan.prog.Done {
		ans.Cursor = scan.cur.encode()
	}
	writeJSON(w, http.StatusOK, typeJSON, ans)
}

// wantsDecoding reads decode= (format= too, as the records route names
// it): avro, jsonschema or protobuf, and the registry type it decodes;
// ok is false when it answered 503 for want of a registry.
func (g *Gateway) wantsDecoding(w http.ResponseWriter, r *http.Request) (format, typ string, ok bool) {
	q := r.URL.Query()
	format = cmp.Or(q.Get("decode"), q.Get("format"))
	typ, known := readFormats[format]
	if !known {
		return "", "", true
	}
	if g.cfg.Schemas == nil {
		writeError(w, http.StatusServiceUnavailable, codeUnavailable, "decode="+format+" needs the schema registry, which is not configured on this node")
		return "", "", false
	}
	return format, typ, true
}

// toReadRecord is rec as a read answer holds it (json.Marshal renders it
// as render.go does).
func toReadRecord(topic string, p int32, rec records.Record) readRecord {
	out := readRecord{Topic: topic, Partition: p, Offset: rec.Offset, Timestamp: rec.Timestamp,
		TimestampType: "CreateTime", Headers: make(map[string]string, len(rec.Headers))}
	if rec.TimestampType == 1 {
		out.TimestampType = "LogAppendTime"
	}
	out.Key, out.KeyEncoding = encodeBytes(rec.Key)
	out.Value, out.ValueEncoding = encodeBytes(rec.Value)
	for _, h := range rec.Headers {
		out.Headers[h.Key] = string(h.Value)
	}
	return out
}

func sortRecords(recs []avroReadRecord, newest bool) {
	slices.SortStableFunc(recs, func(a, b avroReadRecord) int {
		c := cmp.Or(cmp.Compare(a.Timestamp, b.Timestamp), cmp.Compare(a.Offset, b.Offset))
		if newest {
			c = -c
		}
		return cmp.Or(c, cmp.Compare(a.Partition, b.Partition))
	})
}

// Export trailers: how the export ended, for a client that reads them.
const (
	trailerDone    = "Ferry-Export-Done"
	trailerCursor  = "Ferry-Export-Cursor"
	trailerScanned = "Ferry-Export-Scanned"
	trailerMatched = "Ferry-Export-Matched"
	trailerStopped = "Ferry-Export-Stopped-By"
	trailerError   = "Ferry-Export-Error"
)

// exportFlushBytes is how much is written between flushes.
const exportFlushBytes = 64 << 10

// exportSummary is the last line of a JSON lines export.
type exportSummary struct {
	Export struct {
		scanProgress
		Cursor string `json:"cursor,omitempty"`
		Error  string `json:"error,omitempty"`
	} `json:"_export"`
}

// exportRecords serves GET /kafka/{topic}/export.
//
//	@Summary		Export a topic's records as JSON lines or CSV
//	@Description	The search's filters, order, budget (larger defaults: 100000 records, 128 MiB; at most 10000000 records, 4 GiB) and cursor, without a match limit; the matches are streamed as they are found, never built in memory. format=jsonl (default): one record per line as GET …/records renders it, then a last line {"_export":{scanned_records, scanned_bytes, matched, partitions, done, stopped_by, cursor, error}}. format=csv: a header row, then topic,partition,offset,timestamp,timestamp_type,key,key_encoding,value,value_encoding,headers (headers as a JSON object; keys and values as text, or base64 named in the encoding column). Either way the HTTP trailers Ferry-Export-Done, -Cursor, -Scanned, -Matched, -Stopped-By and -Error say how it ended: a spent budget ends the export with done false and a cursor to continue, not an error. Errors before the first byte are JSON error answers.
//	@Tags			browser
//	@Produce		json
//	@Produce		text/csv
//	@Param			topic				path	string	true	"topic name"
//	@Param			format				query	string	false	"jsonl (default) or csv"	Enums(jsonl,csv)
//	@Param			key					query	string	false	"as search"
//	@Param			value				query	string	false	"as search"
//	@Param			header				query	string	false	"as search"
//	@Param			json				query	string	false	"as search"
//	@Param			partitions			query	string	false	"as search"
//	@Param			from				query	string	false	"as search"
//	@Param			to					query	string	false	"as search"
//	@Param			order				query	string	false	"newest (default) or oldest"	Enums(newest,oldest)
//	@Param			max_scan_records	query	integer	false	"default 100000, at most 10000000"	minimum(1)
//	@Param			max_scan_bytes		query	integer	false	"default 128 MiB, at most 4 GiB"	minimum(1)
//	@Param			cursor				query	string	false	"a search's or export's cursor, with the same filters"
//	@Success		200					{string}	string		"the records, streamed"
//	@Failure		400					{object}	errorBody	"40002: a filter, the budget, the cursor or format is not valid"
//	@Failure		404					{object}	errorBody	"40401: no such topic"
//	@Router			/kafka/{topic}/export [get]
func (g *Gateway) exportRecords(w http.ResponseWriter, r *http.Request) {
	topic := pathParam(r, "topic")
	format := cmp.Or(r.URL.Query().Get("format"), "jsonl")
	if format != "jsonl" && format != "csv" {
		writeError(w, http.StatusBadRequest, codeBadParam, fmt.Sprintf("format %q: want jsonl or csv", format))
		return
	}
	scan, err := g.newBrowseScan(r.Context(), topic, r.URL.Query(), true)
	if err != nil {
		writeBrowseError(w, err)
		return
	}
	out := newExportWriter(w, topic, format)
	scan.emit, scan.onWindow = out.record, out.keepAlive
	runErr := scan.run(r.Context())
	out.finish(scan, runErr)
}

// exportWriter streams an export: records buffered up to
// exportFlushBytes, then written and flushed.
type exportWriter struct {
	w      http.ResponseWriter
	rc     *http.ResponseController
	topic  string
	csv    bool
	buf    bytes.Buffer
	csvOut *csv.Writer
	rr     *readRenderer
	failed bool // the client went away
	// lastWrite is when the write deadline was last extended.
	lastWrite time.Time
}

func newExportWriter(w http.ResponseWriter, topic, format string) *exportWriter {
	e := &exportWriter{w: w, rc: http.NewResponseController(w), topic: topic, csv: format == "csv", rr: getReadRenderer()}
	ext, ctype := "jsonl", "application/x-ndjson"
	if e.csv {
		ext, ctype = "csv", "text/csv; charset=utf-8"
		e.csvOut = csv.NewWriter(&e.buf)
		e.csvOut.Write([]string{"topic", "partition", "offset", "timestamp", "timestamp_type", "key", "key_encoding", "value", "value_encoding", "headers"})
	}
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", fmt.Sprintf("%s-%s.%s", safeFileName(topic), time.Now().UTC().Format("20060102T150405Z"), ext)))
	h.Set("Trailer", trailerDone+", "+trailerCursor+", "+trailerScanned+", "+trailerMatched+", "+trailerStopped+", "+trailerError)
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	return e
}

// safeFileName keeps a topic name's characters that are safe in a file
// name (topic names are [a-zA-Z0-9._-] already; this is belt and braces).
func safeFileName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	return string(b)
}

func (e *exportWriter) record(p int32, rec *records.Record) bool {
	if e.csv {
		key, keyEnc := csvBytes(rec.Key)
		value, valueEnc := csvBytes(rec.Value)
		hs := make(map[string]string, len(rec.Headers))
		for _, h := range rec.Headers {
			hs[h.Key] = string(h.Value)
		}
		hj, _ := json.Marshal(hs)
		tsType := "CreateTime"
		if rec.TimestampType == 1 {
			tsType = "LogAppendTime"
		}
		e.csvOut.Write([]string{e.topic, strconv.Itoa(int(p)), strconv.FormatInt(rec.Offset, 10), strconv.FormatInt(rec.Timestamp, 10),
			tsType, key, keyEnc, value, valueEnc, string(hj)})
		e.csvOut.Flush()
	} else {
		line, _ := e.rr.appendRecord(e.rr.out[:0], e.topic, p, *rec)
		e.rr.out = append(line, '\n')
		e.buf.Write(e.rr.out)
	}
	if e.buf.Len() >= exportFlushBytes {
		return e.flush()
	}
	return true
}

// csvBytes is a key or value for a CSV cell: text when UTF-8, else base64.
func csvBytes(b []byte) (string, string) {
	switch {
	case b == nil:
		return "", "null"
	case utf8.Valid(b):
		return string(b), ""
	}
	return base64.StdEncoding.EncodeToString(b), encodingBase64
}

// keepAlive, between windows, sends what is buffered once a second has
// passed since the last write: a slow scan's few matches reach the client
// as they are found rather than when 64 KiB have gathered.
func (e *exportWriter) keepAlive() {
	if time.Since(e.lastWrite) >= time.Second {
		e.flush()
	}
}

// flush writes what is buffered; false when the client is gone.
func (e *exportWriter) flush() bool {
	if e.failed {
		return false
	}
	// A long export outlives the server's write timeout; each write gets
	// its own deadline.
	e.lastWrite = time.Now()
	e.rc.SetWriteDeadline(e.lastWrite.Add(streamWriteTimeout))
	if _, err := e.w.Write(e.buf.Bytes()); err != nil {
		e.failed = true
		return false
	}
	e.buf.Reset()
	if err := e.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		e.failed = true
		return false
	}
	return true
}

// finish writes the summary line (JSON lines) and the trailers.
func (e *exportWriter) finish(scan *browseScan, runErr error) {
	defer putReadRenderer(e.rr)
	cursor := ""
	if !scan.prog.Done {
		cursor = scan.cur.encode()
	}
	if !e.csv {
		var sum exportSummary
		sum.Export.scanProgress, sum.Export.Cursor = scan.prog, cursor
		if runErr != nil {
			sum.Export.Error = runErr.Error()
		}
		line, _ := json.Marshal(sum)
		e.buf.Write(append(line, '\n'))
	}
	e.flush()
	h := e.w.Header()
	h.Set(trailerDone, strconv.FormatBool(scan.prog.Done && runErr == nil))
	h.Set(trailerCursor, cursor)
	h.Set(trailerScanned, strconv.FormatInt(scan.prog.ScannedRecords, 10))
	h.Set(trailerMatched, strconv.Itoa(scan.prog.Matched))
	h.Set(trailerStopped, scan.prog.StoppedBy)
	if runErr != nil {
		h.Set(trailerError, runErr.Error())
	}
}

// Republish: limits of POST /kafka/{topic}/republish.
const maxRepublishRecords = 1000

type republishRequest struct {
	// Target is the topic the records are written to; it must exist.
	Target string `json:"target" example:"orders-retry"`
	// Records are the source records, by partition and offset.
	Records []server.RecordOffset `json:"records"`
	// KeepPartition writes each record to its source partition number
	// (the target must have it); otherwise the target's partitioner
	// chooses (by key hash, as for any keyed produce).
	KeepPartition bool `json:"keep_partition,omitempty"`
} //	@name	RepublishRequest

type republishedRecord struct {
	From server.RecordOffset `json:"from"`
	To   server.RecordOffset `json:"to"`
}

type republishAnswer struct {
	Target  string              `json:"target"`
	Records []republishedRecord `json:"records"`
} //	@name	RepublishAnswer

// republishRecords serves POST /kafka/{topic}/republish.
//
//	@Summary		Republish records to another topic
//	@Description	Reads the listed records of the topic (at most 1000, by partition and offset) and writes them to target in one produce (all or none are validated before any is written; acks=all), keys, values, headers and timestamps kept. Needs READ on the topic and WRITE on the target. A listed offset that holds no record (never written, compacted away, deleted by retention, a transaction marker) fails the request with nothing written.
//	@Tags			browser
//	@Accept			json
//	@Produce		json
//	@Param			topic	path		string				true	"source topic"
//	@Param			body	body		republishRequest	true	"target and records"
//	@Success		200		{object}	republishAnswer
//	@Failure		400		{object}	errorBody	"40001: the body is not valid; 40002: no records, too many, or one listed twice"
//	@Failure		403		{object}	errorBody	"40301: WRITE on the target is not allowed"
//	@Failure		404		{object}	errorBody	"40401: no such topic (source or target); 40402: no such partition; 40403: an offset holds no record"
//	@Router			/kafka/{topic}/republish [post]
func (g *Gateway) republishRecords(w http.ResponseWriter, r *http.Request) {
	topic := pathParam(r, "topic")
	var req republishRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, codeMalformed, "body: "+err.Error())
		return
	}
	if err := checkRepublish(&req); err != nil {
		writeError(w, http.StatusBadRequest, codeBadParam, err.Error())
		return
	}
	if !g.may(r, auth.OpWrite, auth.Resource{Type: auth.ResourceTopic, Name: req.Target}) {
		g.deny(w, r, fmt.Sprintf("%s may not %s %s", auth.PrincipalFrom(r.Context()), auth.OpWrite, auth.Resource{Type: auth.ResourceTopic, Name: req.Target}))
		return
	}
	if _, err := g.broker.PartitionCountInCluster(topic); err != nil {
		writeCoreError(w, err)
		return
	}
	if _, err := g.broker.PartitionCountInCluster(req.Target); err != nil {
		writeCoreError(w, fmt.Errorf("target: %w", err))
		return
	}
	recs, err := g.readListed(r, topic, req.Records)
	if err != nil {
		var missing missingRecordError
		if errors.As(err, &missing) {
			writeError(w, http.StatusNotFound, codeRecordNotFound, err.Error())
			return
		}
		writeCoreError(w, err)
		return
	}
	produce := server.ProduceRequest{Topic: req.Target, Records: make([]server.ProduceRecord, len(recs))}
	for i, rec := range recs {
		produce.Records[i] = server.ProduceRecord{Partition: server.PartitionAuto, Record: rec}
		if req.KeepPartition {
			produce.Records[i].Partition = req.Records[i].Partition
		}
	}
	res, err := g.broker.Produce(r.Context(), &produce)
	var partial *server.PartialWriteError
	if errors.As(err, &partial) {
		writePartialWrite(w, res.Offsets, partial)
		return
	}
	if err != nil {
		writeCoreError(w, err)
		return
	}
	ans := republishAnswer{Target: req.Target, Records: make([]republishedRecord, len(res.Offsets))}
	for i, o := range res.Offsets {
		ans.Records[i] = republishedRecord{From: req.Records[i], To: o}
	}
	writeJSON(w, http.StatusOK, typeJSON, ans)
}

func checkRepublish(req *republishRequest) error {
	if err := server.ValidateTopicName(req.Target); err != nil {
		return fmt.Errorf("target: %v", err)
	}
	if len(req.Records) == 0 || len(req.Records) > maxRepublishRecords {
		return fmt.Errorf("records: list 1 to %d records, not %d", maxRepublishRecords, len(req.Records))
	}
	seen := make(map[server.RecordOffset]bool, len(req.Records))
	for _, ro := range req.Records {
		if ro.Partition < 0 || ro.Offset < 0 {
			return fmt.Errorf("records: partition %d offset %d is not a record's place", ro.Partition, ro.Offset)
		}
		if seen[ro] {
			return fmt.Errorf("records: partition %d offset %d is listed twice", ro.Partition, ro.Offset)
		}
		seen[ro] = true
	}
	return nil
}

type missingRecordError struct{ at server.RecordOffset }

func (e missingRecordError) Error() string {
	return fmt.Sprintf("partition %d offset %d holds no record", e.at.Partition, e.at.Offset)
}

// readListed reads the listed records, in the list's order, through the
// consumer read path: one fetch per listed offset, the batch holding it.
func (g *Gateway) readListed(r *http.Request, topic string, list []server.RecordOffset) ([]records.Record, error) {
	out := make([]records.Record, len(list))
	maxDecompressed := g.broker.Config().MaxDecompressedBytes
	for i, at := range list {
		res, err := g.broker.ConsumerFetch(r.Context(), server.FetchRequest{Topic: topic, Partition: at.Partition, Offset: at.Offset, MaxBytes: 1}, nil)
		if errors.Is(err, server.ErrOffsetOutOfRange) {
			return nil, missingRecordError{at}
		}
		if err != nil {
			return nil, err
		}
		found := false
		err = records.Decode(res.Data, at.Offset, maxDecompressed, func(rec records.Record) bool {
			if rec.Offset == at.Offset {
				out[i], found = copyRecord(rec), true
			}
			return false
		})
		if err != nil {
			return nil, fmt.Errorf("%w: decode %s-%d: %v", server.ErrCorruptMessage, topic, at.Partition, err)
		}
		if !found {
			return nil, missingRecordError{at}
		}
		out[i].Offset, out[i].TimestampType = 0, 0
	}
	return out, nil
}
