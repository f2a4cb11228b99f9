// Package jepsen checks what producers were told against what the log
// holds, in the manner of Jepsen's Kafka workload (its ideas, not its
// code): every produce attempt is written to a History with its outcome
// (acknowledged at a partition and offset, failed for certain, or
// indeterminate), the partitions are read back in full after the faults
// are healed, from every node that will serve them, and Check counts the
// anomalies:
//
//   - lost: an acknowledged Kafka write that no read holds;
//   - lost-http: the same for a write acknowledged by the HTTP gateway;
//   - duplicate: one written value at two offsets (or partitions);
//   - inconsistent-offset: two values at one offset, across sources or
//     within one;
//   - nonmonotonic-offset: a producer writing one record at a time was
//     acknowledged an offset at or below an earlier acknowledgement in the
//     same partition;
//   - nonmonotonic-read: one source's read of a partition going back or
//     repeating an offset;
//   - poll-skip: a consumer reading live from the start passed over an
//     offset the final reads hold;
//   - wrong-offset: an acknowledged write read at another offset or
//     partition than it was acknowledged at;
//   - failed-present: a write refused for certain that a read holds;
//   - unexpected: a read value no producer attempted;
//   - read-lost: a record a consumer read while the faults ran (Live) that
//     the final reads do not hold at that offset: a consumer saw what was
//     later taken back.
//
// A correct system under any fault shows none. The package also runs the
// producers and readers (workload.go) and measures the longest stretch
// without acknowledgements per partition (AckGaps). Transactions have
// their own history and check (txn.go: CheckTxn), over the same reads and
// with the same report: aborted reads (G1a), precommitted reads, lost
// commits, torn transactions, order and duplicates under read_committed.
package jepsen

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Outcome is what a producer was told about one write.
type Outcome int

const (
	// Acked: the write is durable at Write.Partition/Write.Offset.
	Acked Outcome = iota + 1
	// Failed: the write was refused before anything was written (an error
	// that says so, e.g. HTTP 503 50306).
	Failed
	// Indeterminate: an error or a timeout after which the write may or
	// may not be in the log.
	Indeterminate
)

func (o Outcome) String() string {
	switch o {
	case Acked:
		return "acked"
	case Failed:
		return "failed"
	case Indeterminate:
		return "indeterminate"
	}
	return fmt.Sprintf("outcome(%d)", int(o))
}

// Write is one attempt to produce one record.
type Write struct {
	Producer  string // the producer; it writes one record at a time
	Via       string // "kafka" or "http"
	Node      string // the node it sent to, for reports
	Topic     string
	Partition int32  // the partition asked for; acknowledged there
	Value     string // unique across the history
	Outcome   Outcome
	Offset    int64  // for Acked
	Err       string // for Failed and Indeterminate
	Start     time.Time
	End       time.Time
}

// Record is one record read back.
type Record struct {
	Source string // who served it, e.g. "kafka" or "http b2"
	// Live marks a record read while the faults ran, not in the final
	// read: it is checked against the final reads (read-lost), and lost,
	// duplicates and offsets are judged by the final reads alone.
	Live bool
	// At is when a live consumer received it (transaction checks: a
	// read_committed record received before its commit was asked).
	At        time.Time
	Topic     string
	Partition int32
	Offset    int64
	Value     string
}

// events is what concurrent producers or consumers append to, in the
// order they append; History, TxnHistory and Reads are its three uses.
type events[T any] struct {
	mu  sync.Mutex
	all []T
}

func (e *events[T]) add(xs ...T) {
	e.mu.Lock()
	e.all = append(e.all, xs...)
	e.mu.Unlock()
}

func (e *events[T]) copy() []T {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.all)
}

// History collects writes from concurrent producers.
type History struct{ events[Write] }

// Add appends w.
func (h *History) Add(w Write) { h.add(w) }

// Writes is a copy of the history so far.
func (h *History) Writes() []Write { return h.copy() }

// Kind names an anomaly.
type Kind string

// Anomalies both checks count: they hold of any log read back, written
// in transactions or not.
const (
	Duplicate          Kind = "duplicate"
	InconsistentOffset Kind = "inconsistent-offset"
	NonmonotonicRead   Kind = "nonmonotonic-read"
	PollSkip           Kind = "poll-skip"
	WrongOffset        Kind = "wrong-offset"
	Unexpected         Kind = "unexpected"
	ReadLost           Kind = "read-lost"
)

// Anomalies of single writes (Check).
const (
	Lost               Kind = "lost"
	LostHTTP           Kind = "lost-http"
	NonmonotonicOffset Kind = "nonmonotonic-offset"
	FailedPresent      Kind = "failed-present"
)

// Kinds is every kind Check counts, in report order.
var Kinds = []Kind{Lost, LostHTTP, Duplicate, InconsistentOffset, NonmonotonicOffset,
	NonmonotonicRead, PollSkip, WrongOffset, FailedPresent, Unexpected, ReadLost}

// Anomaly is one finding, with what shows it.
type Anomaly struct {
	Kind   Kind
	Detail string
}

// Report is the answer of Check (Writes set) and of CheckTxn (Txns set).
type Report struct {
	Writes    map[Outcome]int    // Check: attempts by outcome
	Txns      map[TxnOutcome]int // CheckTxn: transactions by outcome
	Read      int                // distinct (partition, offset)s in the final reads
	LiveRead  int                // records read while the faults ran
	Count     map[Kind]int
	Anomalies []Anomaly
	kinds     []Kind // the kinds the check counts, in report order
}

// Total is the number of anomalies of every kind.
func (r Report) Total() int { return len(r.Anomalies) }

// String is a summary: counts, then up to 20 anomalies.
func (r Report) String() string {
	var b strings.Builder
	if r.Txns != nil {
		fmt.Fprintf(&b, "transactions: %d committed, %d aborted, %d indeterminate",
			r.Txns[Committed], r.Txns[Aborted], r.Txns[TxnIndeterminate])
	} else {
		fmt.Fprintf(&b, "writes: %d acked, %d failed, %d indeterminate",
			r.Writes[Acked], r.Writes[Failed], r.Writes[Indeterminate])
	}
	fmt.Fprintf(&b, "; %d offsets read, %d records read live; anomalies:", r.Read, r.LiveRead)
	for _, k := range r.kinds {
		fmt.Fprintf(&b, " %s=%d", k, r.Count[k])
	}
	for i, a := range r.Anomalies {
		if i == 20 {
			fmt.Fprintf(&b, "\n  … %d more", len(r.Anomalies)-i)
			break
		}
		fmt.Fprintf(&b, "\n  %s: %s", a.Kind, a.Detail)
	}
	return b.String()
}

type position struct {
	topic     string
	partition int32
	offset    int64
}

func (p position) String() string { return fmt.Sprintf("%s-%d@%d", p.topic, p.partition, p.offset) }

type partitionKey struct {
	topic     string
	partition int32
}

// checker holds the indexes of what was read, shared by Check and
// CheckTxn, and the report they fill.
type checker struct {
	report Report
	reads  []Record
	atPos  map[position][]Record // every read record at a position
	where  map[string][]position // each value's distinct positions in the final reads
	// finalOffsets is, per partition, the offsets the final reads hold,
	// ascending.
	finalOffsets map[partitionKey][]int64
}

func newChecker(kinds []Kind, reads []Record) *checker {
	c := &checker{
		report: Report{Count: map[Kind]int{}, kinds: kinds},
		reads:  reads,
		atPos:  map[position][]Record{},
		where:  map[string][]position{},
	}
	c.index()
	return c
}

func (c *checker) add(k Kind, format string, args ...any) {
	c.report.Count[k]++
	c.report.Anomalies = append(c.report.Anomalies, Anomaly{k, fmt.Sprintf(format, args...)})
}

func (c *checker) index() {
	for _, r := range c.reads {
		p := position{r.Topic, r.Partition, r.Offset}
		c.atPos[p] = append(c.atPos[p], r)
		if r.Live {
			c.report.LiveRead++
		} else if !slices.Contains(c.where[r.Value], p) {
			c.where[r.Value] = append(c.where[r.Value], p)
		}
	}
	c.finalOffsets = map[partitionKey][]int64{}
	for _, p := range sortedPositions(c.atPos) {
		if slices.ContainsFunc(c.atPos[p], func(r Record) bool { return !r.Live }) {
			k := partitionKey{p.topic, p.partition}
			c.finalOffsets[k] = append(c.finalOffsets[k], p.offset)
			c.report.Read++
		}
	}
}

// checkReads runs the checks that need no history: each source reads
// forward without skipping, one value per offset, one offset per value,
// what was seen live is kept. written says whether a value was attempted;
// keepsLive whether a live read of it must be in the final reads.
func (c *checker) checkReads(written, keepsLive func(value string) bool) {
	c.readsInOrder()
	c.liveReadsKept(keepsLive)
	c.offsetsHoldOneValue()
	c.valuesAtOneOffset(written)
}

// liveReadsKept: what a consumer saw during the faults is in the final
// reads, at the same offset.
func (c *checker) liveReadsKept(keepsLive func(value string) bool) {
	for _, r := range c.reads {
		if r.Live && keepsLive(r.Value) && !slices.Contains(c.where[r.Value], position{r.Topic, r.Partition, r.Offset}) {
			c.add(ReadLost, "%s read %s at %s-%d@%d; the final reads have it at %v",
				r.Source, r.Value, r.Topic, r.Partition, r.Offset, c.where[r.Value])
		}
	}
}

// readsInOrder: each source reads each partition forward (no offset
// again or back: nonmonotonic-read), and a live consumer passes over no
// offset the final reads hold (poll-skip): it read from the start, and
// once it has read offset b, everything readable below b was readable.
func (c *checker) readsInOrder() {
	type streamKey struct {
		source string
		partitionKey
	}
	last := map[streamKey]int64{}
	for _, r := range c.reads {
		k := streamKey{r.Source, partitionKey{r.Topic, r.Partition}}
		prev, ok := last[k]
		if !ok {
			prev = -1
		}
		if ok && r.Offset <= prev {
			c.add(NonmonotonicRead, "%s read %s-%d offset %d after %d", r.Source, r.Topic, r.Partition, r.Offset, prev)
		} else if skipped := c.finalBetween(k.partitionKey, prev, r.Offset); r.Live && len(skipped) > 0 {
			c.add(PollSkip, "%s read %s-%d offset %d after %d, passing over %s", r.Source, r.Topic, r.Partition,
				r.Offset, prev, fmtOffsets(skipped))
		}
		last[k] = max(prev, r.Offset)
	}
}

// finalBetween is the offsets of partition k the final reads hold in
// (from, to).
func (c *checker) finalBetween(k partitionKey, from, to int64) []int64 {
	offs := c.finalOffsets[k]
	lo, _ := slices.BinarySearch(offs, from+1)
	hi, _ := slices.BinarySearch(offs, to)
	return offs[lo:max(lo, hi)]
}

func fmtOffsets(offs []int64) string {
	if len(offs) > 5 {
		return fmt.Sprintf("%v … (%d offsets)", offs[:5], len(offs))
	}
	return fmt.Sprint(offs)
}

func (c *checker) offsetsHoldOneValue() {
	for _, p := range sortedPositions(c.atPos) {
		recs := c.atPos[p]
		var values []string
		for _, r := range recs {
			if !slices.Contains(values, r.Value) {
				values = append(values, r.Value)
			}
		}
		if len(values) > 1 {
			var by []string
			for _, r := range recs {
				by = append(by, fmt.Sprintf("%s from %s", r.Value, r.Source))
			}
			c.add(InconsistentOffset, "%s holds %s", p, strings.Join(by, ", "))
		}
	}
}

// valuesAtOneOffset: a value is in the final reads at one position at
// most, and every value read (live or final) was written.
func (c *checker) valuesAtOneOffset(written func(value string) bool) {
	seen := map[string]bool{}
	var values []string
	for _, r := range c.reads {
		if !seen[r.Value] {
			seen[r.Value] = true
			values = append(values, r.Value)
		}
	}
	sort.Strings(values)
	for _, v := range values {
		ps := c.where[v]
		if len(ps) > 1 {
			c.add(Duplicate, "%s at %v", v, ps)
		}
		if !written(v) {
			c.add(Unexpected, "%s at %v was never written", v, c.positionsRead(v))
		}
	}
}

// positionsRead is every position v was read at, live or final.
func (c *checker) positionsRead(v string) []position {
	var ps []position
	for _, r := range c.reads {
		if p := (position{r.Topic, r.Partition, r.Offset}); r.Value == v && !slices.Contains(ps, p) {
			ps = append(ps, p)
		}
	}
	return ps
}

// Check compares the writes with the reads. Reads must cover every
// partition written to, from its start to its end, from at least one
// source; more sources (each node's replica) find more.
func Check(writes []Write, reads []Record) Report {
	c := newChecker(Kinds, reads)
	c.report.Writes = map[Outcome]int{}
	written := map[string]Write{}
	for _, w := range writes {
		c.report.Writes[w.Outcome]++
		written[w.Value] = w
	}
	c.checkReads(func(v string) bool { _, ok := written[v]; return ok }, func(string) bool { return true })
	c.writesAgainstReads(writes)
	c.producersMonotonic(writes)
	return c.report
}

func (c *checker) writesAgainstReads(writes []Write) {
	for _, w := range writes {
		ps := c.where[w.Value]
		switch w.Outcome {
		case Acked:
			at := position{w.Topic, w.Partition, w.Offset}
			switch {
			case len(ps) == 0 && w.Via == "http":
				c.add(LostHTTP, "%s acknowledged by %s over HTTP at %s (%s) is not in the log", w.Value, w.Node, at, w.End.Format("15:04:05.000"))
			case len(ps) == 0:
				c.add(Lost, "%s acknowledged by %s at %s (%s) is not in the log", w.Value, w.Node, at, w.End.Format("15:04:05.000"))
			case !slices.Contains(ps, at):
				c.add(WrongOffset, "%s acknowledged at %s is at %v", w.Value, at, ps)
			}
		case Failed:
			if len(ps) > 0 {
				c.add(FailedPresent, "%s refused by %s (%s) is at %v", w.Value, w.Node, w.Err, ps)
			}
		}
	}
}

// producersMonotonic: a producer's acknowledged offsets grow, per
// partition, in the order it wrote (by Start).
func (c *checker) producersMonotonic(writes []Write) {
	byProducer := map[string][]Write{}
	for _, w := range writes {
		if w.Outcome == Acked {
			byProducer[w.Producer] = append(byProducer[w.Producer], w)
		}
	}
	producers := make([]string, 0, len(byProducer))
	for p := range byProducer {
		producers = append(producers, p)
	}
	sort.Strings(producers)
	for _, p := range producers {
		ws := byProducer[p]
		slices.SortStableFunc(ws, func(a, b Write) int { return a.Start.Compare(b.Start) })
		last := map[partitionKey]Write{}
		for _, w := range ws {
			k := partitionKey{w.Topic, w.Partition}
			if prev, ok := last[k]; ok && w.Offset <= prev.Offset {
				c.add(NonmonotonicOffset, "%s: %s acknowledged at %s-%d@%d after %s at %d",
					p, w.Value, w.Topic, w.Partition, w.Offset, prev.Value, prev.Offset)
			}
			last[k] = w
		}
	}
}

func sortedPositions(m map[position][]Record) []position {
	ps := make([]position, 0, len(m))
	for p := range m {
		ps = append(ps, p)
	}
	slices.SortFunc(ps, func(a, b position) int {
		if c := strings.Compare(a.topic, b.topic); c != 0 {
			return c
		}
		if a.partition != b.partition {
			return int(a.partition - b.partition)
		}
		return int(a.offset - b.offset)
	})
	return ps
}

// Gap is a stretch without acknowledgements on one partition (AckGaps)
// or without commits by one producer (CommitGaps).
type Gap struct {
	Topic     string
	Partition int32
	Producer  string
	From, To  time.Time // the acks that bound it (From: the window's start when no ack came before)
	Duration  time.Duration
}

// AckGaps is, per partition written to, the longest time within [from,
// to] between consecutive acknowledgements (from and to count as bounds:
// a partition with no ack after from measures up to to).
func AckGaps(writes []Write, from, to time.Time) map[string]Gap {
	acks := map[partitionKey][]time.Time{}
	for _, w := range writes {
		k := partitionKey{w.Topic, w.Partition}
		if w.Outcome == Acked {
			acks[k] = append(acks[k], w.End)
		} else if _, ok := acks[k]; !ok {
			acks[k] = nil
		}
	}
	gaps := map[string]Gap{}
	for k, times := range acks {
		g := longestGap(times, from, to)
		g.Topic, g.Partition = k.topic, k.partition
		gaps[fmt.Sprintf("%s-%d", k.topic, k.partition)] = g
	}
	return gaps
}

// CommitGaps is, per producer, the longest time within [from, to]
// between consecutive acknowledged commits, as AckGaps.
func CommitGaps(txns []Txn, from, to time.Time) map[string]Gap {
	commits := map[string][]time.Time{}
	for _, x := range txns {
		if x.Outcome == Committed {
			commits[x.Producer] = append(commits[x.Producer], x.End)
		} else if _, ok := commits[x.Producer]; !ok {
			commits[x.Producer] = nil
		}
	}
	gaps := map[string]Gap{}
	for p, times := range commits {
		g := longestGap(times, from, to)
		g.Producer = p
		gaps[p] = g
	}
	return gaps
}

// longestGap is the longest stretch between consecutive times within
// [from, to], from and to bounding it.
func longestGap(times []time.Time, from, to time.Time) Gap {
	times = slices.DeleteFunc(slices.Clone(times), func(t time.Time) bool { return t.Before(from) || t.After(to) })
	slices.SortFunc(times, time.Time.Compare)
	bounds := append(append([]time.Time{from}, times...), to)
	var g Gap
	for i := 1; i < len(bounds); i++ {
		if d := bounds[i].Sub(bounds[i-1]); d > g.Duration {
			g.From, g.To, g.Duration = bounds[i-1], bounds[i], d
		}
	}
	return g
}
