package jepsen

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Transactions: producers write several records per transaction (across
// partitions), commit most and abort some on purpose; read_committed
// consumers read while the faults run and once more at the end.
// CheckTxn counts the anomalies of Jepsen's Kafka transaction workload:
//
//   - aborted-read (G1a): a read_committed reader saw a record of a
//     transaction that was aborted;
//   - precommitted-read: a read_committed reader saw a record before its
//     transaction's producer had asked to commit (uncommitted data);
//   - lost-committed: a record of a transaction whose commit was
//     acknowledged is not in the final read_committed reads;
//   - nonatomic: some records of one transaction are in the final
//     read_committed reads and others are not;
//   - txn-duplicate: one record at two positions under read_committed (a
//     retried write landing again, in a later transaction);
//   - txn-unexpected: a read_committed record no transaction wrote;
//   - txn-read-lost: a record of a transaction not known aborted that a
//     read_committed consumer saw during the faults and the final reads
//     do not hold at that position.

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
type TxnHistory struct {
	mu   sync.Mutex
	txns []Txn
}

// Add appends x.
func (h *TxnHistory) Add(x Txn) {
	h.mu.Lock()
	h.txns = append(h.txns, x)
	h.mu.Unlock()
}

// Txns is a copy of the history so far.
func (h *TxnHistory) Txns() []Txn {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.txns)
}

// Transaction anomaly kinds.
const (
	AbortedRead       Kind = "aborted-read"
	PrecommittedRead  Kind = "precommitted-read"
	LostCommitted     Kind = "lost-committed"
	Nonatomic         Kind = "nonatomic"
	TxnDuplicate      Kind = "txn-duplicate"
	TxnUnexpected     Kind = "txn-unexpected"
	TxnReadLost       Kind = "txn-read-lost"
	TxnNonmonotonicRd Kind = "txn-nonmonotonic-read"
)

// TxnKinds is every kind CheckTxn counts, in report order.
var TxnKinds = []Kind{AbortedRead, PrecommittedRead, LostCommitted, Nonatomic, TxnDuplicate,
	TxnUnexpected, TxnReadLost, TxnNonmonotonicRd}

// TxnReport is CheckTxn's answer.
type TxnReport struct {
	Txns      map[TxnOutcome]int
	Read      int // records in the final read_committed reads
	LiveRead  int
	Count     map[Kind]int
	Anomalies []Anomaly
}

// Total is the number of anomalies of every kind.
func (r TxnReport) Total() int { return len(r.Anomalies) }

func (r TxnReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "transactions: %d committed, %d aborted, %d indeterminate; %d records read, %d read live; anomalies:",
		r.Txns[Committed], r.Txns[Aborted], r.Txns[TxnIndeterminate], r.Read, r.LiveRead)
	for _, k := range TxnKinds {
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

// CheckTxn compares the transactions with what read_committed readers
// read: reads is the final read (Live false) of every partition written,
// after every transaction ended, plus what consumers read during the
// faults (Live, with At set).
func CheckTxn(txns []Txn, reads []Record) TxnReport {
	r := TxnReport{Txns: map[TxnOutcome]int{}, Count: map[Kind]int{}}
	add := func(k Kind, format string, args ...any) {
		r.Count[k]++
		r.Anomalies = append(r.Anomalies, Anomaly{k, fmt.Sprintf(format, args...)})
	}
	txnOf := map[string]*Txn{}
	for i := range txns {
		r.Txns[txns[i].Outcome]++
		for _, v := range txns[i].Values {
			txnOf[v.Value] = &txns[i]
		}
	}
	final := map[string][]position{}
	type streamKey struct {
		source string
		partitionKey
	}
	last := map[streamKey]int64{}
	for _, rec := range reads {
		k := streamKey{rec.Source, partitionKey{rec.Topic, rec.Partition}}
		if prev, ok := last[k]; ok && rec.Offset <= prev {
			add(TxnNonmonotonicRd, "%s read %s-%d offset %d after %d", rec.Source, rec.Topic, rec.Partition, rec.Offset, prev)
		}
		last[k] = rec.Offset
		p := position{rec.Topic, rec.Partition, rec.Offset}
		if rec.Live {
			r.LiveRead++
		} else {
			r.Read++
			if !slices.Contains(final[rec.Value], p) {
				final[rec.Value] = append(final[rec.Value], p)
			}
		}
		x := txnOf[rec.Value]
		switch {
		case x == nil:
			add(TxnUnexpected, "%s read %s at %s, which no transaction wrote", rec.Source, rec.Value, p)
		case x.Outcome == Aborted:
			add(AbortedRead, "%s read %s at %s of %s, aborted (%s)", rec.Source, rec.Value, p, x.Name, x.End.Format("15:04:05.000"))
		case rec.Live && !rec.At.IsZero() && (x.CommitAt.IsZero() || rec.At.Before(x.CommitAt)):
			add(PrecommittedRead, "%s read %s at %s (%s) of %s before its commit was asked (%s)",
				rec.Source, rec.Value, p, rec.At.Format("15:04:05.000"), x.Name, fmtTime(x.CommitAt))
		}
	}
	for _, rec := range reads {
		if x := txnOf[rec.Value]; rec.Live && x != nil && x.Outcome != Aborted && !slices.Contains(final[rec.Value], position{rec.Topic, rec.Partition, rec.Offset}) {
			add(TxnReadLost, "%s read %s at %s-%d@%d; the final reads have it at %v",
				rec.Source, rec.Value, rec.Topic, rec.Partition, rec.Offset, final[rec.Value])
		}
	}
	values := make([]string, 0, len(final))
	for v := range final {
		values = append(values, v)
	}
	sort.Strings(values)
	for _, v := range values {
		if len(final[v]) > 1 {
			add(TxnDuplicate, "%s at %v", v, final[v])
		}
	}
	for _, x := range txns {
		var present, absent []string
		for _, v := range x.Values {
			if len(final[v.Value]) > 0 {
				present = append(present, v.Value)
			} else {
				absent = append(absent, v.Value)
			}
		}
		switch {
		case x.Outcome == Committed && len(absent) > 0:
			add(LostCommitted, "%s committed (%s) but %v are not in the log (present: %v)", x.Name, x.End.Format("15:04:05.000"), absent, present)
		case x.Outcome == TxnIndeterminate && len(present) > 0 && len(absent) > 0:
			add(Nonatomic, "%s (%s): %v visible, %v not", x.Name, x.Err, present, absent)
		}
	}
	return r
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
		into.add(recs)
	}
	return nil
}

// ReadCommitted reads partitions 0..partitions-1 of topic at
// read_committed from the start until nothing more arrives for idle (call
// it once every transaction has ended); Source "final".
func ReadCommitted(ctx context.Context, seeds []string, topic string, partitions int32, idle time.Duration) ([]Record, error) {
	cl, err := committedReader(seeds, topic, partitions)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var out []Record
	for ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, idle)
		fs := cl.PollFetches(pctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			n++
			out = append(out, Record{Source: "final", Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Value: decodeValue(r.Value)})
		})
		if n == 0 && ctx.Err() == nil {
			return out, nil
		}
	}
	return out, ctx.Err()
}

func committedReader(seeds []string, topic string, partitions int32) (*kgo.Client, error) {
	start := map[int32]kgo.Offset{}
	for p := range partitions {
		start[p] = kgo.NewOffset().AtStart()
	}
	return kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: start}))
}
