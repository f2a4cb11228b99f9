package jepsen

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Transactions: producers write several records per transaction (across
// partitions), commit most and abort some on purpose; read_committed
// consumers read while the faults run and once more at the end.
// CheckTxn counts, besides the anomalies any read back shows (duplicate,
// inconsistent-offset, nonmonotonic-read, poll-skip, wrong-offset,
// unexpected, read-lost: see the package doc), those of Jepsen's Kafka
// transaction workload:
//
//   - aborted-read (G1a): a read_committed reader saw a record of a
//     transaction that was aborted, or that never asked to commit;
//   - precommitted-read: a read_committed reader saw a record before its
//     transaction's producer had asked to commit (uncommitted data; a
//     read after the ask and before its acknowledgement is allowed);
//   - lost-committed: a record of a transaction whose commit was
//     acknowledged is not in the final read_committed reads;
//   - nonatomic: some records of an undecided transaction are in the
//     final reads and others are not;
//   - send-order: a transaction's records to one partition in another
//     order than it sent them;
//   - realtime-order: a record of a transaction that asked to commit
//     before another started, after one of the other's records;
//   - duplicate, across transactions: a record at two positions (a
//     retried write landing again, in a later transaction).

// TxnOutcome is what a transactional producer was told about one
// transaction.
type TxnOutcome int

const (
	// Committed: EndTxn(commit) was acknowledged.
	Committed TxnOutcome = iota + 1
	// Aborted: the producer aborted it and the abort was acknowledged.
	Aborted
	// TxnIndeterminate: an error on the way; committed or aborted, but as
	// a whole.
	TxnIndeterminate
)

func (o TxnOutcome) String() string {
	switch o {
	case Committed:
		return "committed"
	case Aborted:
		return "aborted"
	case TxnIndeterminate:
		return "indeterminate"
	}
	return fmt.Sprintf("txn-outcome(%d)", int(o))
}

// TxnValue is one record of a transaction.
type TxnValue struct {
	Topic     string
	Partition int32
	Value     string // unique across the history
}

// Txn is one transaction attempt.
type Txn struct {
	Producer string
	Name     string // producer-n
	Values   []TxnValue
	Outcome  TxnOutcome
	Err      string
	Start    time.Time
	// CommitAt is when the producer asked to commit (zero: it never did);
	// a read_committed read before it is a precommitted read.
	CommitAt time.Time
	End      time.Time
}

// TxnHistory collects transactions from concurrent producers.
type TxnHistory struct{ events[Txn] }

// Add appends x.
func (h *TxnHistory) Add(x Txn) { h.add(x) }

// Txns is a copy of the history so far.
func (h *TxnHistory) Txns() []Txn { return h.copy() }

// Anomalies of transactions (CheckTxn), besides the shared ones.
const (
	AbortedRead      Kind = "aborted-read"
	PrecommittedRead Kind = "precommitted-read"
	LostCommitted    Kind = "lost-committed"
	Nonatomic        Kind = "nonatomic"
	SendOrder        Kind = "send-order"
	RealtimeOrder    Kind = "realtime-order"
)

// TxnKinds is every kind CheckTxn counts, in report order.
var TxnKinds = []Kind{AbortedRead, PrecommittedRead, LostCommitted, Nonatomic, Duplicate,
	InconsistentOffset, NonmonotonicRead, PollSkip, SendOrder, RealtimeOrder, WrongOffset,
	Unexpected, ReadLost}

// mustAbort: the transaction cannot have committed. A coordinator only
// commits on an EndTxn(commit), so one whose producer aborted it, or
// never asked to commit (it failed before, and the next client with its
// transactional id fenced it and aborted what it left open), ends
// aborted.
func (x *Txn) mustAbort() bool {
	return x.Outcome == Aborted || (x.Outcome == TxnIndeterminate && x.CommitAt.IsZero())
}

// CheckTxn compares the transactions with what read_committed readers
// read: reads is the final read (Live false) of every partition written,
// after every transaction ended, plus what consumers read during the
// faults (Live, with At set), each source's records in the order it read
// them.
//
// Kafka's rule for read_committed is that a record becomes visible once
// its transaction's commit marker is in the partition, which the
// coordinator writes only after it decided to commit (PrepareCommit in
// its log), which it does only on the producer's EndTxn(commit). The
// producer may be told of the commit after readers saw it, so a read
// between asking to commit and the answer is allowed; one before the ask
// is a precommitted read, one of a transaction that cannot have
// committed is an aborted read (G1a).
func CheckTxn(txns []Txn, reads []Record) Report {
	c := newChecker(TxnKinds, reads)
	c.report.Txns = map[TxnOutcome]int{}
	txnOf := map[string]*Txn{}
	wrote := map[string]TxnValue{}
	for i := range txns {
		c.report.Txns[txns[i].Outcome]++
		for _, v := range txns[i].Values {
			txnOf[v.Value], wrote[v.Value] = &txns[i], v
		}
	}
	c.checkReads(func(v string) bool { return txnOf[v] != nil },
		func(v string) bool { return txnOf[v] != nil && !txnOf[v].mustAbort() })
	for _, r := range reads {
		x := txnOf[r.Value]
		p := position{r.Topic, r.Partition, r.Offset}
		switch {
		case x == nil:
		case x.mustAbort():
			c.add(AbortedRead, "%s read %s at %s of %s, %s (%s)", r.Source, r.Value, p, x.Name, x.endedAs(), fmtTime(x.End))
		case r.Live && !r.At.IsZero() && !x.CommitAt.IsZero() && r.At.Before(x.CommitAt):
			c.add(PrecommittedRead, "%s read %s at %s (%s) of %s before its commit was asked (%s)",
				r.Source, r.Value, p, fmtTime(r.At), x.Name, fmtTime(x.CommitAt))
		}
		if v, ok := wrote[r.Value]; ok && (v.Topic != r.Topic || v.Partition != r.Partition) {
			c.add(WrongOffset, "%s read %s of %s at %s; it was written to %s-%d", r.Source, r.Value, x.Name, p, v.Topic, v.Partition)
		}
	}
	for i := range txns {
		c.txnWhole(&txns[i])
		c.txnInSendOrder(&txns[i])
	}
	c.txnsInRealtimeOrder(txns)
	return c.report
}

func (x *Txn) endedAs() string {
	if x.Outcome == Aborted {
		return "aborted"
	}
	return "never asked to commit (" + x.Err + ")"
}

// txnWhole: a committed transaction is in the final reads whole; one
// whose outcome is unknown is there whole or not at all.
func (c *checker) txnWhole(x *Txn) {
	var present, absent []string
	for _, v := range x.Values {
		if len(c.where[v.Value]) > 0 {
			present = append(present, v.Value)
		} else {
			absent = append(absent, v.Value)
		}
	}
	switch {
	case x.Outcome == Committed && len(absent) > 0:
		c.add(LostCommitted, "%s committed (%s) but %v are not in the log (present: %v)", x.Name, fmtTime(x.End), absent, present)
	case x.Outcome == TxnIndeterminate && !x.mustAbort() && len(present) > 0 && len(absent) > 0:
		c.add(Nonatomic, "%s (%s): %v visible, %v not", x.Name, x.Err, present, absent)
	}
}

// txnInSendOrder: a transaction's records to one partition are in the
// log in the order it sent them.
func (c *checker) txnInSendOrder(x *Txn) {
	last := map[partitionKey]position{}
	lastValue := map[partitionKey]string{}
	for _, v := range x.Values {
		ps := c.where[v.Value]
		if len(ps) != 1 {
			continue // absent (judged above) or doubled (a duplicate)
		}
		k := partitionKey{ps[0].topic, ps[0].partition}
		if prev, ok := last[k]; ok && ps[0].offset <= prev.offset {
			c.add(SendOrder, "%s sent %s before %s, the log has them at %s and %s", x.Name, lastValue[k], v.Value, prev, ps[0])
		}
		last[k], lastValue[k] = ps[0], v.Value
	}
}

// txnSpan is where one transaction's records are in one partition.
type txnSpan struct {
	x             *Txn
	first, last   int64
	firstV, lastV string
}

// txnsInRealtimeOrder: a log is one order, and a transaction's records
// are appended between its start and its ask to commit (the producer
// waits for their acknowledgements before asking). So when X asked to
// commit before Y started, every record of X in a partition precedes
// every record of Y there; a record found after a later transaction's is
// one appended late (a delayed retry landing in a later transaction) or
// a log reordered.
func (c *checker) txnsInRealtimeOrder(txns []Txn) {
	spans := map[partitionKey][]txnSpan{}
	for i := range txns {
		x := &txns[i]
		mine := map[partitionKey]*txnSpan{}
		for _, v := range x.Values {
			ps := c.where[v.Value]
			if len(ps) != 1 {
				continue // absent, or doubled: a duplicate already
			}
			for _, p := range ps {
				k := partitionKey{p.topic, p.partition}
				s := mine[k]
				if s == nil {
					s = &txnSpan{x: x, first: p.offset, last: p.offset, firstV: v.Value, lastV: v.Value}
					mine[k] = s
				}
				if p.offset < s.first {
					s.first, s.firstV = p.offset, v.Value
				}
				if p.offset > s.last {
					s.last, s.lastV = p.offset, v.Value
				}
			}
		}
		for k, s := range mine {
			spans[k] = append(spans[k], *s)
		}
	}
	for _, k := range sortedPartitions(spans) {
		c.partitionInRealtimeOrder(k, spans[k])
	}
}

// partitionInRealtimeOrder checks one partition's spans: sorted by the
// time each transaction asked to commit, the latest record of those that
// asked before Y started must be below Y's first.
func (c *checker) partitionInRealtimeOrder(k partitionKey, spans []txnSpan) {
	var asked []txnSpan
	for _, s := range spans {
		if !s.x.CommitAt.IsZero() {
			asked = append(asked, s)
		}
	}
	slices.SortFunc(asked, func(a, b txnSpan) int { return a.x.CommitAt.Compare(b.x.CommitAt) })
	// highest[i] is the span with the highest last offset among asked[:i+1].
	highest := make([]txnSpan, len(asked))
	for i, s := range asked {
		highest[i] = s
		if i > 0 && highest[i-1].last > s.last {
			highest[i] = highest[i-1]
		}
	}
	slices.SortFunc(spans, func(a, b txnSpan) int { return a.x.Start.Compare(b.x.Start) })
	for _, y := range spans {
		n := sort.Search(len(asked), func(i int) bool { return !asked[i].x.CommitAt.Before(y.x.Start) })
		if n == 0 {
			continue
		}
		if h := highest[n-1]; h.last >= y.first {
			c.add(RealtimeOrder, "%s-%d: %s asked to commit (%s) before %s started (%s), yet its %s is at %d, after %s's %s at %d",
				k.topic, k.partition, h.x.Name, fmtTime(h.x.CommitAt), y.x.Name, fmtTime(y.x.Start), h.lastV, h.last, y.x.Name, y.firstV, y.first)
		}
	}
}

func sortedPartitions[V any](m map[partitionKey]V) []partitionKey {
	ks := make([]partitionKey, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(a, b partitionKey) int {
		if c := strings.Compare(a.topic, b.topic); c != 0 {
			return c
		}
		return int(a.partition - b.partition)
	})
	return ks
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.Format("15:04:05.000")
}

// TxnProducer describes one transactional writer: transaction n writes
// the values "<Name>-n-0" … "<Name>-n-<PerTxn-1>", spread over
// partitions 0..Partitions-1 of Topic, and every AbortEvery-th one is
// aborted after its records were acknowledged (so aborted data is in the
// log for readers to wrongly see).
type TxnProducer struct {
	Name       string
	Topic      string
	Partitions int32
	PerTxn     int
	AbortEvery int
	Every      time.Duration
	Max        int
	Timeout    time.Duration // bounds one transaction
}

// ProduceTxns runs p until ctx ends or p.Max transactions. newClient makes
// a transactional client (kgo.TransactionalID, a manual partitioner); after
// an error the client is closed and a new one made with the same id, which
// fences the old epoch and ends what it left open.
func ProduceTxns(ctx context.Context, h *TxnHistory, newClient func() (*kgo.Client, error), p TxnProducer) {
	var cl *kgo.Client
	defer func() {
		if cl != nil {
			cl.Close()
		}
	}()
	for n := 0; (p.Max == 0 || n < p.Max) && ctx.Err() == nil; n++ {
		x := Txn{Producer: p.Name, Name: fmt.Sprintf("%s-%d", p.Name, n), Start: time.Now()}
		for i := range p.PerTxn {
			x.Values = append(x.Values, TxnValue{Topic: p.Topic, Partition: int32((n + i) % int(p.Partitions)),
				Value: fmt.Sprintf("%s-%d", x.Name, i)})
		}
		if cl == nil {
			var err error
			if cl, err = newClient(); err != nil {
				x.Outcome, x.Err, x.End = Aborted, "client: "+err.Error(), time.Now()
				h.Add(x) // nothing was written
				pause(ctx, time.Second)
				continue
			}
		}
		abort := p.AbortEvery > 0 && n%p.AbortEvery == p.AbortEvery-1
		tctx, cancel := context.WithTimeout(ctx, p.Timeout)
		ok := runTxn(tctx, cl, &x, abort)
		cancel()
		x.End = time.Now()
		h.Add(x)
		if !ok {
			cl.Close()
			cl = nil
		}
		pause(ctx, p.Every)
	}
}

// runTxn writes x and ends it; false when the client must be replaced.
func runTxn(ctx context.Context, cl *kgo.Client, x *Txn, abort bool) bool {
	if err := cl.BeginTransaction(); err != nil {
		x.Outcome, x.Err = TxnIndeterminate, "begin: "+err.Error()
		return false
	}
	var rs []*kgo.Record
	for _, v := range x.Values {
		rs = append(rs, &kgo.Record{Topic: v.Topic, Partition: v.Partition, Value: encodeValue(v.Value)})
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		x.Err = "produce: " + err.Error()
		// Records may be in the log; an acknowledged abort makes them
		// aborted, anything else leaves the outcome open.
		x.Outcome = TxnIndeterminate
		if cl.AbortBufferedRecords(ctx) == nil && cl.EndTransaction(ctx, kgo.TryAbort) == nil {
			x.Outcome = Aborted
			return true
		}
		return false
	}
	end := kgo.TryCommit
	if abort {
		end = kgo.TryAbort
	} else {
		x.CommitAt = time.Now()
	}
	if err := cl.EndTransaction(ctx, end); err != nil {
		x.Outcome, x.Err = TxnIndeterminate, "end: "+err.Error()
		return false
	}
	x.Outcome = Committed
	if abort {
		x.Outcome = Aborted
	}
	return true
}

func pause(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// ConsumeCommitted reads partitions 0..partitions-1 of topic at
// read_committed from the start until ctx ends; each record is Live with
// At the time it arrived, Source source.
func ConsumeCommitted(ctx context.Context, into *Reads, seeds []string, source, topic string, partitions int32) error {
	cl, err := committedReader(seeds, topic, partitions)
	if err != nil {
		return err
	}
	defer cl.Close()
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		at := time.Now()
		var recs []Record
		fs.EachRecord(func(r *kgo.Record) {
			recs = append(recs, Record{Source: source, Live: true, At: at, Topic: r.Topic, Partition: r.Partition,
				Offset: r.Offset, Value: decodeValue(r.Value)})
		})
		into.add(recs...)
	}
	return nil
}

func committedReader(seeds []string, topic string, partitions int32) (*kgo.Client, error) {
	start := map[int32]kgo.Offset{}
	for p := range partitions {
		start[p] = kgo.NewOffset().AtStart()
	}
	return kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: start}))
}
