package api

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/records"
)

// The scan behind search and export: partitions taken in turns, a window
// of records from each per turn, read through the core's consumer read
// path (ConsumerFetch: on a cluster from an in-sync replica here or from
// the leader), decoded under the broker's decompression budget, each
// record counted against the scan budget and tested against the filters.
// The cursor's ranges move record by record, so stopping anywhere (budget
// spent, enough matches, the client gone) leaves a cursor that resumes
// exactly after the last record looked at.

// Scan budget: records and bytes (keys, values and headers, decompressed)
// looked at by one request, whether they match or not.
const (
	defaultScanRecords = 10000
	maxScanRecords     = 1000000
	defaultScanBytes   = 16 << 20
	maxScanBytes       = 256 << 20
	// Export's defaults are larger: it streams, so the budget bounds
	// time, not memory.
	defaultExportRecords = 100000
	maxExportRecords     = 10000000
	defaultExportBytes   = 128 << 20
	maxExportBytes       = 4 << 30
)

// windowRecords and windowBytes bound one window read from a partition:
// what is held in memory at once (one larger record is still admitted).
const (
	windowRecords    = 256
	maxWindowRecords = 16384
	windowBytes      = 1 << 20
	// totalWindowBytes is shared by the partitions' windows read ahead:
	// with many partitions each window is smaller.
	totalWindowBytes = 8 << 20
)

type scanBudget struct {
	records int64
	bytes   int64
	results int // matches before stopping; 0: no limit (export)
}

// partitionProgress is what one request scanned of one partition.
type partitionProgress struct {
	Partition int32 `json:"partition"`
	// Scanned is the records this request looked at.
	Scanned int64 `json:"scanned"`
	// Remaining is the offsets left to scan (an upper bound: compaction
	// and transaction markers leave offsets without records).
	Remaining int64 `json:"remaining"`
}

type scanProgress struct {
	ScannedRecords int64               `json:"scanned_records"`
	ScannedBytes   int64               `json:"scanned_bytes"`
	Matched        int                 `json:"matched"`
	Partitions     []partitionProgress `json:"partitions"`
	// Done: every record in range was scanned; no cursor.
	Done bool `json:"done"`
	// StoppedBy says why a scan that is not done stopped: budget_records,
	// budget_bytes or limit.
	StoppedBy string `json:"stopped_by,omitempty"`
}

type browseScan struct {
	g       *Gateway
	topic   string
	filter  *recordFilter
	cur     *searchCursor
	budget  scanBudget
	scanned map[int32]int64
	prog    scanProgress
	// winRecords and winBytes bound each partition's window.
	winRecords int64
	winBytes   int
	// emit receives each match (its bytes valid only during the call);
	// false stops the scan with the cursor after that record.
	emit func(partition int32, rec *records.Record) bool
	// onWindow, when set, runs before each window is read: a streaming
	// export sends the matches it holds.
	onWindow func()
}

var errStopScan = errors.New("scan stopped")

// newBrowseScan checks the topic, reads the filters, budget and order
// from the query, and the cursor (or the ranges a fresh search covers).
func (g *Gateway) newBrowseScan(ctx context.Context, topic string, q url.Values, export bool) (*browseScan, error) {
	partitions, err := g.broker.PartitionCountInCluster(topic)
	if err != nil {
		return nil, err
	}
	filter, err := parseRecordFilter(q)
	if err != nil {
		return nil, badParam(err)
	}
	newest, err := parseOrder(q.Get("order"))
	if err != nil {
		return nil, badParam(err)
	}
	budget, err := parseScanBudget(q, export)
	if err != nil {
		return nil, badParam(err)
	}
	s := &browseScan{g: g, topic: topic, filter: &filter, budget: budget, scanned: map[int32]int64{}}
	fp := filter.fingerprint(q, newest)
	if text := q.Get("cursor"); text != "" {
		if s.cur, err = decodeCursor(text, partitions); err != nil {
			return nil, badParam(err)
		}
		if s.cur.fingerprint != fp || s.cur.newest != newest {
			return nil, badParam(fmt.Errorf("%w: it was made for other filters or another order", errBadCursor))
		}
		return s, nil
	}
	chosen, err := parsePartitions(q.Get("partitions"), partitions)
	if err != nil {
		return nil, badParam(err)
	}
	s.cur = &searchCursor{fingerprint: fp, newest: newest}
	for _, p := range chosen {
		r, err := g.initialRange(ctx, topic, p, &filter)
		if err != nil {
			return nil, err
		}
		s.cur.ranges = append(s.cur.ranges, r)
	}
	return s, nil
}

// badParamError marks a query the client must fix (400, codeBadParam).
type badParamError struct{ err error }

func (e badParamError) Error() string { return e.err.Error() }
func (e badParamError) Unwrap() error { return e.err }

func badParam(err error) error { return badParamError{err} }

// writeBrowseError answers a scan's error: the client's query (400) or
// the core's (its table).
func writeBrowseError(w http.ResponseWriter, err error) {
	var bad badParamError
	if errors.As(err, &bad) {
		writeError(w, http.StatusBadRequest, codeBadParam, bad.Error())
		return
	}
	writeCoreError(w, err)
}

// maxSearchPartitions bounds the partitions one search covers: their
// ranges must fit in a cursor (maxCursorText); a topic with more is
// searched a set of partitions at a time (partitions=).
const maxSearchPartitions = 500

// parsePartitions reads partitions= ("0,3,7"; empty: all of the topic's).
func parsePartitions(v string, count int32) ([]int32, error) {
	var out []int32
	if v == "" {
		if count > maxSearchPartitions {
			return nil, fmt.Errorf("the topic has %d partitions; search at most %d at a time with partitions=", count, maxSearchPartitions)
		}
		for p := int32(0); p < count; p++ {
			out = append(out, p)
		}
		return out, nil
	}
	seen := map[int64]bool{}
	for _, f := range strings.Split(v, ",") {
		p, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
		if err != nil || p < 0 || p >= int64(count) {
			return nil, fmt.Errorf("partitions: %q is not a partition of the topic (0 to %d)", f, count-1)
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, int32(p))
		}
		if len(out) > maxSearchPartitions {
			return nil, fmt.Errorf("partitions: more than %d", maxSearchPartitions)
		}
	}
	return out, nil
}

func parseOrder(v string) (newest bool, err error) {
	switch v {
	case "", "newest", "newest_first", "desc":
		return true, nil
	case "oldest", "oldest_first", "asc":
		return false, nil
	}
	return false, fmt.Errorf("order %q: want newest or oldest", v)
}

func parseScanBudget(q url.Values, export bool) (scanBudget, error) {
	defRecords, maxRecords, defBytes, maxBytes := defaultScanRecords, maxScanRecords, defaultScanBytes, maxScanBytes
	if export {
		defRecords, maxRecords, defBytes, maxBytes = defaultExportRecords, maxExportRecords, defaultExportBytes, maxExportBytes
	}
	var b scanBudget
	n, err := intParam(q.Get("max_scan_records"), defRecords, 1, maxRecords)
	if err != nil {
		return b, fmt.Errorf("max_scan_records: %v", err)
	}
	b.records = int64(n)
	if n, err = intParam(q.Get("max_scan_bytes"), defBytes, 1, maxBytes); err != nil {
		return b, fmt.Errorf("max_scan_bytes: %v", err)
	}
	b.bytes = int64(n)
	if !export {
		if b.results, err = intParam(q.Get("limit"), 100, 1, 1000); err != nil {
			return b, fmt.Errorf("limit: %v", err)
		}
	}
	return b, nil
}

// initialRange is the offsets of partition p a fresh search covers: the
// log from its start to the high watermark, narrowed by the time range
// through the time index (ListOffsets by timestamp). Timestamps need not
// grow with offsets, so records inside are still tested one by one.
func (g *Gateway) initialRange(ctx context.Context, topic string, p int32, f *recordFilter) (scanRange, error) {
	r := scanRange{Partition: p}
	var err error
	if r.Lo, _, err = g.broker.ConsumerListOffset(ctx, topic, p, server.OffsetEarliest); err != nil {
		return r, err
	}
	if r.Hi, _, err = g.broker.ConsumerListOffset(ctx, topic, p, server.OffsetLatest); err != nil {
		return r, err
	}
	if f.hasFrom {
		off, _, err := g.broker.ConsumerListOffset(ctx, topic, p, f.fromTs)
		if err != nil {
			return r, err
		}
		if off < 0 {
			off = r.Hi // no record that late
		}
		r.Lo = max(r.Lo, off)
	}
	if f.hasTo {
		off, _, err := g.broker.ConsumerListOffset(ctx, topic, p, f.toTs+1)
		if err != nil {
			return r, err
		}
		if off >= 0 {
			r.Hi = min(r.Hi, off)
		}
	}
	r.Hi = max(r.Hi, r.Lo)
	return r, nil
}

// run scans until every range is done, the budget is spent, the result
// limit is reached or emit says stop. Each partition has a window read
// ahead; the next record scanned is the newest (or oldest) of the
// windows' heads, so matches come in timestamp order across partitions
// (within one, in offset order).
func (s *browseScan) run(ctx context.Context) error {
	defer s.finish()
	n := max(1, len(s.cur.ranges))
	s.winRecords = int64(min(windowRecords, max(8, 8192/n)))
	s.winBytes = min(windowBytes, max(16<<10, totalWindowBytes/n))
	heads := &scanHeap{s: s}
	for i := range s.cur.ranges {
		ps := &partitionScan{r: &s.cur.ranges[i], step: s.winRecords}
		if err := s.fill(ctx, ps); err != nil {
			return err
		}
		if ps.pos < len(ps.recs) {
			heads.items = append(heads.items, ps)
		}
	}
	heap.Init(heads)
	for heads.Len() > 0 {
		best := heads.items[0]
		rec := &best.recs[best.pos]
		best.pos++
		if err := s.scanRecord(best.r, rec); err != nil {
			if errors.Is(err, errStopScan) {
				return nil
			}
			return err
		}
		if err := s.fill(ctx, best); err != nil {
			return err
		}
		if best.pos < len(best.recs) {
			heap.Fix(heads, 0)
		} else {
			heap.Pop(heads)
		}
	}
	return nil
}

// scanHeap orders the partitions by their next record in scan order
// (ties by partition), so picking the next record costs log(partitions).
type scanHeap struct {
	s     *browseScan
	items []*partitionScan
}

func (h *scanHeap) Len() int { return len(h.items) }
func (h *scanHeap) Less(i, j int) bool {
	a, b := &h.items[i].recs[h.items[i].pos], &h.items[j].recs[h.items[j].pos]
	if a.Timestamp != b.Timestamp {
		return h.s.before(a, b)
	}
	return h.items[i].r.Partition < h.items[j].r.Partition
}
func (h *scanHeap) Swap(i, j int) { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *scanHeap) Push(x any)    { h.items = append(h.items, x.(*partitionScan)) }
func (h *scanHeap) Pop() any {
	last := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return last
}

func (s *browseScan) finish() {
	s.prog.Partitions = s.prog.Partitions[:0]
	done := true
	for _, r := range s.cur.ranges {
		s.prog.Partitions = append(s.prog.Partitions, partitionProgress{Partition: r.Partition, Scanned: s.scanned[r.Partition], Remaining: r.Hi - r.Lo})
		if r.Lo < r.Hi {
			done = false
		}
	}
	s.prog.Done = done
	if done {
		s.prog.StoppedBy = ""
	}
}

// partitionScan is one partition's window being scanned: recs in scan
// order, pos the next to scan.
type partitionScan struct {
	r      *scanRange
	win    window
	recs   []records.Record
	pos    int
	loaded bool
	// step is the records the next window spans: doubled while windows
	// stay well under the byte bound, cut when one is over it.
	step int64
	// fetched is the fetch buffer, reused window after window.
	fetched []byte
}

// before reports whether a comes before b in the scan's order.
func (s *browseScan) before(a, b *records.Record) bool {
	if s.cur.newest {
		return a.Timestamp > b.Timestamp
	}
	return a.Timestamp < b.Timestamp
}

// fill reads ps's next window once its current one is scanned, moving
// the range past the window (offsets without records included).
func (s *browseScan) fill(ctx context.Context, ps *partitionScan) error {
	for ps.pos >= len(ps.recs) {
		if ps.loaded {
			if s.cur.newest {
				ps.r.Hi = max(ps.r.Lo, min(ps.r.Hi, ps.win.start))
			} else {
				ps.r.Lo = min(ps.r.Hi, max(ps.r.Lo, ps.win.end))
			}
			ps.loaded, ps.recs, ps.pos = false, nil, 0
		}
		if ps.r.Lo >= ps.r.Hi {
			return nil
		}
		if s.onWindow != nil {
			s.onWindow()
		}
		win, err := s.nextWindow(ctx, ps)
		if err != nil {
			return err
		}
		ps.win, ps.recs, ps.loaded = win, win.recs, true
		if s.cur.newest {
			slices.Reverse(ps.recs)
		}
	}
	return nil
}

// nextWindow reads the next window of ps (its oldest or newest records).
func (s *browseScan) nextWindow(ctx context.Context, ps *partitionScan) (window, error) {
	r := ps.r
	for {
		step := min(ps.step, max(1, s.budget.records-s.prog.ScannedRecords))
		ws, we := r.Lo, min(r.Hi, r.Lo+step)
		if s.cur.newest {
			ws, we = max(r.Lo, r.Hi-step), r.Hi
		}
		win, err := s.readWindow(ctx, ps, ws, we)
		if errors.Is(err, errWindowTooLarge) && ps.step > 1 {
			ps.step = max(1, ps.step/4) // newest-first: a smaller window from the top
			continue
		}
		if err == nil && win.size < s.winBytes/4 && int64(len(win.recs)) >= (we-ws)/2 {
			ps.step = min(ps.step*2, maxWindowRecords) // small records: read more at once
		}
		return win, err
	}
}

// window is records of [start, end) of one partition, ascending, copied
// into arena and headers (so a window costs a few allocations, not a few
// per record).
type window struct {
	start, end int64
	recs       []records.Record
	size       int // rawSize of recs
	arena      []byte
	headers    []records.Header
}

// keep copies rec's bytes into the window.
func (w *window) keep(rec records.Record) records.Record {
	out := rec
	out.Key, out.Value = w.bytes(rec.Key), w.bytes(rec.Value)
	if n := len(rec.Headers); n > 0 {
		if cap(w.headers)-len(w.headers) < n {
			w.headers = make([]records.Header, 0, max(n, 256))
		}
		start := len(w.headers)
		for _, h := range rec.Headers {
			w.headers = append(w.headers, records.Header{Key: h.Key, Value: w.bytes(h.Value)})
		}
		out.Headers = w.headers[start:len(w.headers):len(w.headers)]
	}
	return out
}

// bytes copies b into the arena; a full arena is left to the records
// already pointing into it and a new one started.
func (w *window) bytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	if cap(w.arena)-len(w.arena) < len(b) {
		w.arena = make([]byte, 0, max(len(b), 64<<10))
	}
	start := len(w.arena)
	w.arena = append(w.arena, b...)
	return w.arena[start:len(w.arena):len(w.arena)]
}

var errWindowTooLarge = errors.New("window over its byte bound")

// readWindow reads [ws, we) of a partition. Oldest-first, a window past
// winBytes ends early (its end moved down to the record that did not
// fit); newest-first it cannot (the top must be kept), and answers
// errWindowTooLarge for a smaller one.
func (s *browseScan) readWindow(ctx context.Context, ps *partitionScan, ws, we int64) (window, error) {
	p := ps.r.Partition
	win := window{start: ws, end: we}
	off := ws
	maxDecompressed := s.g.broker.Config().MaxDecompressedBytes
	for off < win.end {
		res, err := s.g.broker.ConsumerFetch(ctx, server.FetchRequest{Topic: s.topic, Partition: p, Offset: off, MaxBytes: s.winBytes}, ps.fetched[:0])
		ps.fetched = res.Data
		if errors.Is(err, server.ErrOffsetOutOfRange) {
			// Retention moved the log start past off, or the log was
			// truncated below it: skip what is no longer there.
			start, _, lerr := s.g.broker.ConsumerListOffset(ctx, s.topic, p, server.OffsetEarliest)
			if lerr == nil && start > off {
				// Nothing below start is left to scan, in either order.
				ps.r.Lo = max(ps.r.Lo, min(start, ps.r.Hi))
				off = start
				continue
			}
			return win, nil
		}
		if err != nil {
			return win, err
		}
		tooLarge := false
		err = records.Decode(res.Data, off, maxDecompressed, func(rec records.Record) bool {
			if rec.Offset >= win.end {
				return false
			}
			n := rawSize(rec)
			if win.size+n > s.winBytes && len(win.recs) > 0 {
				if s.cur.newest {
					tooLarge = true
				} else {
					win.end = rec.Offset
				}
				return false
			}
			win.size += n
			win.recs = append(win.recs, win.keep(rec))
			return true
		})
		if err != nil {
			return win, fmt.Errorf("%w: decode %s-%d: %v", server.ErrCorruptMessage, s.topic, p, err)
		}
		if tooLarge {
			return win, errWindowTooLarge
		}
		next := records.NextOffset(res.Data)
		if n := len(win.recs); n > 0 {
			next = max(next, win.recs[n-1].Offset+1)
		}
		if next <= off {
			break // nothing more below the high watermark
		}
		off = next
	}
	return win, nil
}

func copyRecord(rec records.Record) records.Record {
	out := rec
	out.Key = cloneNullable(rec.Key)
	out.Value = cloneNullable(rec.Value)
	if len(rec.Headers) > 0 {
		out.Headers = make([]records.Header, len(rec.Headers))
		for i, h := range rec.Headers {
			out.Headers[i] = records.Header{Key: h.Key, Value: cloneNullable(h.Value)}
		}
	}
	return out
}

func cloneNullable(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}

// scanRecord counts rec against the budget, moves r past it and tests
// it; errStopScan when the budget, the limit or emit stops the scan
// (before rec when the budget would be overrun, else after it).
func (s *browseScan) scanRecord(r *scanRange, rec *records.Record) error {
	size := rawSize(*rec)
	if stop := s.spent(size); stop != "" {
		s.prog.StoppedBy = stop
		return errStopScan
	}
	s.prog.ScannedRecords++
	s.prog.ScannedBytes += int64(size)
	s.scanned[r.Partition]++
	s.advance(r, rec.Offset)
	if !s.filter.matches(rec) {
		return nil
	}
	s.prog.Matched++
	if !s.emit(r.Partition, rec) {
		s.prog.StoppedBy = "client"
		return errStopScan
	}
	if s.budget.results > 0 && s.prog.Matched >= s.budget.results {
		s.prog.StoppedBy = "limit"
		return errStopScan
	}
	return nil
}

// advance moves r past the record at offset.
func (s *browseScan) advance(r *scanRange, offset int64) {
	if s.cur.newest {
		r.Hi = max(r.Lo, min(r.Hi, offset))
	} else {
		r.Lo = min(r.Hi, max(r.Lo, offset+1))
	}
}

// spent names the budget the next record of size n would overrun; the
// first record of a request is always admitted, so a search progresses.
func (s *browseScan) spent(n int) string {
	if s.prog.ScannedRecords == 0 {
		return ""
	}
	switch {
	case s.prog.ScannedRecords >= s.budget.records:
		return "budget_records"
	case s.prog.ScannedBytes+int64(n) > s.budget.bytes:
		return "budget_bytes"
	}
	return ""
}
