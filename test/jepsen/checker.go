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
// their own history and check (txn.go: CheckTxn): aborted reads (G1a),
// precommitted reads, lost commits, torn transactions and duplicates
// under read_committed.
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

// History collects writes from concurrent producers.
type History struct {
	mu     sync.Mutex
	writes []Write
}

// Add appends w.
func (h *History) Add(w Write) {
	h.mu.Lock()
	h.writes = append(h.writes, w)
	h.mu.Unlock()
}

// Writes is a copy of the history so far.
func (h *History) Writes() []Write {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.writes)
}

// Kind names an anomaly.
type Kind string

const (
	Lost               Kind = "lost"
	LostHTTP           Kind = "lost-http"
	Duplicate          Kind = "duplicate"
	InconsistentOffset Kind = "inconsistent-offset"
	NonmonotonicOffset Kind = "nonmonotonic-offset"
	NonmonotonicRead   Kind = "nonmonotonic-read"
	WrongOffset        Kind = "wrong-offset"
	FailedPresent      Kind = "failed-present"
	Unexpected         Kind = "unexpected"
	ReadLost           Kind = "read-lost"
)

// Kinds is every kind Check counts, in report order.
var Kinds = []Kind{Lost, LostHTTP, Duplicate, InconsistentOffset, NonmonotonicOffset,
	NonmonotonicRead, WrongOffset, FailedPresent, Unexpected, ReadLost}

// Anomaly is one finding, with what shows it.
type Anomaly struct {
	Kind   Kind
	Detail string
}

// Report is Check's answer.
type Report struct {
	Writes    map[Outcome]int // attempts by outcome
	Read      int             // distinct (partition, offset)s in the final reads
	LiveRead  int             // records read while the faults ran
	Count     map[Kind]int
	Anomalies []Anomaly
}

// Total is the number of anomalies of every kind.
func (r Report) Total() int { return len(r.Anomalies) }

// String is a summary: counts, then up to 20 anomalies.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "writes: %d acked, %d failed, %d indeterminate; %d offsets read, %d records read live; anomalies:",
		r.Writes[Acked], r.Writes[Failed], r.Writes[Indeterminate], r.Read, r.LiveRead)
	for _, k := range Kinds {
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

// checker holds one Check's indexes.
type checker struct {
	report  Report
	atPos   map[position][]Record // every read record at a position
	where   map[string][]position // each value's distinct positions
	written map[string]Write      // each attempted value
}

// Check compares the writes with the reads. Reads must cover every
// partition written to, from its start to its end, from at least one
// source; more sources (each node's replica) find more.
func Check(writes []Write, reads []Record) Report {
	c := &checker{
		report:  Report{Writes: map[Outcome]int{}, Count: map[Kind]int{}},
		atPos:   map[position][]Record{},
		where:   map[string][]position{},
		written: map[string]Write{},
	}
	for _, w := range writes {
		c.report.Writes[w.Outcome]++
		c.written[w.Value] = w
	}
	c.index(reads)
	c.readsInOrder(reads)
	c.liveReadsKept(reads)
	c.offsetsHoldOneValue()
	c.valuesAtOneOffset()
	c.writesAgainstReads(writes)
	c.producersMonotonic(writes)
	return c.report
}

func (c *checker) add(k Kind, format string, args ...any) {
	c.report.Count[k]++
	c.report.Anomalies = append(c.report.Anomalies, Anomaly{k, fmt.Sprintf(format, args...)})
}

func (c *checker) index(reads []Record) {
	for _, r := range reads {
		p := position{r.Topic, r.Partition, r.Offset}
		c.atPos[p] = append(c.atPos[p], r)
		if r.Live {
			c.report.LiveRead++
		} else if !slices.Contains(c.where[r.Value], p) {
			c.where[r.Value] = append(c.where[r.Value], p)
		}
	}
	c.report.Read = 0
	for _, recs := range c.atPos {
		if slices.ContainsFunc(recs, func(r Record) bool { return !r.Live }) {
			c.report.Read++
		}
	}
}

// liveReadsKept: what a consumer saw during the faults is in the final
// reads, at the same offset.
func (c *checker) liveReadsKept(reads []Record) {
	for _, r := range reads {
		if r.Live && !slices.Contains(c.where[r.Value], position{r.Topic, r.Partition, r.Offset}) {
			c.add(ReadLost, "%s read %s at %s-%d@%d; the final reads have it at %v",
				r.Source, r.Value, r.Topic, r.Partition, r.Offset, c.where[r.Value])
		}
	}
}

// readsInOrder: each source reads each partition forward.
func (c *checker) readsInOrder(reads []Record) {
	type streamKey struct {
		source string
		partitionKey
	}
	last := map[streamKey]int64{}
	for _, r := range reads {
		k := streamKey{r.Source, partitionKey{r.Topic, r.Partition}}
		if prev, ok := last[k]; ok && r.Offset <= prev {
			c.add(NonmonotonicRead, "%s read %s-%d offset %d after %d", r.Source, r.Topic, r.Partition, r.Offset, prev)
		}
		last[k] = r.Offset
	}
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

func (c *checker) valuesAtOneOffset() {
	values := make([]string, 0, len(c.where))
	for v := range c.where {
		values = append(values, v)
	}
	sort.Strings(values)
	for _, v := range values {
		ps := c.where[v]
		if len(ps) > 1 {
			c.add(Duplicate, "%s at %v", v, ps)
		}
		if _, ok := c.written[v]; !ok {
			c.add(Unexpected, "%s at %v was never written", v, ps)
		}
	}
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

// Gap is a stretch without acknowledgements on one partition.
type Gap struct {
	Topic     string
	Partition int32
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
		if _, ok := acks[k]; !ok {
			acks[k] = nil
		}
		if w.Outcome == Acked && !w.End.Before(from) && !w.End.After(to) {
			acks[k] = append(acks[k], w.End)
		}
	}
	gaps := map[string]Gap{}
	for k, times := range acks {
		slices.SortFunc(times, time.Time.Compare)
		bounds := append(append([]time.Time{from}, times...), to)
		g := Gap{Topic: k.topic, Partition: k.partition}
		for i := 1; i < len(bounds); i++ {
			if d := bounds[i].Sub(bounds[i-1]); d > g.Duration {
				g.From, g.To, g.Duration = bounds[i-1], bounds[i], d
			}
		}
		gaps[fmt.Sprintf("%s-%d", k.topic, k.partition)] = g
	}
	return gaps
}
