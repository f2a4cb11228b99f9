package kcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// The operator's view of transactions, as kafka-transactions.sh gives it:
// list, describe, describe-producers, abort, find-hanging.

// ErrNoTransaction: the transactional id is unknown to its coordinator.
var ErrNoTransaction = errors.New("no such transactional id")

// ListTransactions lists every transactional id of the cluster (each
// coordinator's), sorted, optionally by state and producer id.
func ListTransactions(ctx context.Context, adm *kadm.Client, states []string, producerIDs []int64) ([]kadm.ListedTransaction, error) {
	listed, err := adm.ListTransactions(ctx, producerIDs, states)
	if err != nil {
		return listed.Sorted(), fmt.Errorf("list transactions: %w", err)
	}
	return listed.Sorted(), nil
}

// WriteListedTransactions prints kafka-transactions.sh list's columns.
func WriteListedTransactions(w io.Writer, txns []kadm.ListedTransaction) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TransactionalId\tCoordinator\tProducerId\tTransactionState")
	for _, t := range txns {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", t.TxnID, t.Coordinator, t.ProducerID, t.State)
	}
	tw.Flush()
}

// DescribeTransaction describes one transactional id at its coordinator.
func DescribeTransaction(ctx context.Context, adm *kadm.Client, id string) (kadm.DescribedTransaction, error) {
	described, err := adm.DescribeTransactions(ctx, id)
	if err != nil {
		return kadm.DescribedTransaction{}, fmt.Errorf("describe transaction %q: %w", id, err)
	}
	d, ok := described[id]
	switch {
	case !ok:
		return d, fmt.Errorf("%w: %q", ErrNoTransaction, id)
	case d.Err != nil && strings.Contains(d.Err.Error(), "TRANSACTIONAL_ID_NOT_FOUND"):
		return d, fmt.Errorf("%w: %q", ErrNoTransaction, id)
	case d.Err != nil:
		return d, fmt.Errorf("describe transaction %q: %w", id, d.Err)
	}
	return d, nil
}

// WriteDescribedTransaction prints kafka-transactions.sh describe's
// columns; durations count from now.
func WriteDescribedTransaction(w io.Writer, d kadm.DescribedTransaction, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CoordinatorId\tTransactionalId\tProducerId\tProducerEpoch\tTransactionState\tTransactionTimeoutMs\tCurrentTransactionStartTimeMs\tTransactionDurationMs\tTopicPartitions")
	start, duration := "None", "None"
	if d.StartTimestamp >= 0 {
		start = fmt.Sprint(d.StartTimestamp)
		duration = fmt.Sprint(now.UnixMilli() - d.StartTimestamp)
	}
	var parts []string
	for _, tp := range d.Topics.Sorted() {
		for _, p := range tp.Partitions {
			parts = append(parts, fmt.Sprintf("%s-%d", tp.Topic, p))
		}
	}
	fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%s\t%d\t%s\t%s\t%s\n", d.Coordinator, d.TxnID, d.ProducerID, d.ProducerEpoch, d.State,
		d.TimeoutMillis, start, duration, strings.Join(parts, ","))
	tw.Flush()
}

// DescribeProducers lists the active producers of one partition, at its
// leader.
func DescribeProducers(ctx context.Context, adm *kadm.Client, topic string, partition int32) ([]kadm.DescribedProducer, error) {
	described, err := adm.DescribeProducers(ctx, kadm.TopicsSet{topic: {partition: {}}})
	if err != nil {
		return nil, fmt.Errorf("describe producers of %s-%d: %w", topic, partition, err)
	}
	var out []kadm.DescribedProducer
	for _, p := range described.SortedPartitions() {
		if p.Err != nil {
			return nil, fmt.Errorf("describe producers of %s-%d: %w", topic, partition, p.Err)
		}
		for _, prod := range p.ActiveProducers.Sorted() {
			out = append(out, prod)
		}
	}
	return out, nil
}

// WriteDescribedProducers prints kafka-transactions.sh
// describe-producers' columns.
func WriteDescribedProducers(w io.Writer, producers []kadm.DescribedProducer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ProducerId\tProducerEpoch\tLatestCoordinatorEpoch\tLastSequence\tLastTimestamp\tCurrentTransactionStartOffset")
	for _, p := range producers {
		start := "None"
		if p.CurrentTxnStartOffset >= 0 {
			start = fmt.Sprint(p.CurrentTxnStartOffset)
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%s\n", p.ProducerID, p.ProducerEpoch, p.CoordinatorEpoch, p.LastSequence, p.LastTimestamp, start)
	}
	tw.Flush()
}

// AbortSpec names a hanging transaction on one partition, as
// kafka-transactions.sh abort takes it.
type AbortSpec struct {
	Topic            string
	Partition        int32
	ProducerID       int64
	ProducerEpoch    int16
	CoordinatorEpoch int32
}

// AbortTransaction writes an abort marker for spec's producer on its
// partition (WriteTxnMarkers to the leader), ending a hanging transaction
// the coordinator no longer knows of.
func AbortTransaction(ctx context.Context, adm *kadm.Client, spec AbortSpec) error {
	resps, err := adm.WriteTxnMarkers(ctx, kadm.TxnMarkers{ProducerID: spec.ProducerID, ProducerEpoch: spec.ProducerEpoch,
		Commit: false, CoordinatorEpoch: spec.CoordinatorEpoch, Topics: kadm.TopicsSet{spec.Topic: {spec.Partition: {}}}})
	if err != nil {
		return fmt.Errorf("abort producer %d on %s-%d: %w", spec.ProducerID, spec.Topic, spec.Partition, err)
	}
	found := false
	var perr error
	resps.EachPartition(func(p kadm.TxnMarkersPartitionResponse) {
		if p.Topic == spec.Topic && p.Partition == spec.Partition {
			found, perr = true, p.Err
		}
	})
	switch {
	case perr != nil:
		return fmt.Errorf("abort producer %d on %s-%d: %w", spec.ProducerID, spec.Topic, spec.Partition, perr)
	case !found:
		return fmt.Errorf("abort producer %d on %s-%d: the leader did not answer for the partition", spec.ProducerID, spec.Topic, spec.Partition)
	}
	return nil
}

// AbortSpecFromStart finds, for kafka-transactions.sh abort
// --start-offset, the producer whose open transaction starts at offset.
func AbortSpecFromStart(ctx context.Context, adm *kadm.Client, topic string, partition int32, offset int64) (AbortSpec, error) {
	producers, err := DescribeProducers(ctx, adm, topic, partition)
	if err != nil {
		return AbortSpec{}, err
	}
	for _, p := range producers {
		if p.CurrentTxnStartOffset == offset {
			return AbortSpec{Topic: topic, Partition: partition, ProducerID: p.ProducerID, ProducerEpoch: p.ProducerEpoch,
				CoordinatorEpoch: p.CoordinatorEpoch}, nil
		}
	}
	return AbortSpec{}, fmt.Errorf("no open transaction starts at offset %d of %s-%d", offset, topic, partition)
}

// Hanging is an open transaction on a partition that outlived the
// longest transaction timeout and that its coordinator does not hold open
// there: its markers will never come (kafka-transactions.sh find-hanging).
type Hanging struct {
	kadm.DescribedProducer
	Duration time.Duration
}

// FindHanging looks for hanging transactions on topics' partitions (all
// topics when none is named): open longer than maxTimeout by the
// partition's producer state, and not an Ongoing transaction of that
// partition at any coordinator.
func FindHanging(ctx context.Context, adm *kadm.Client, topics []string, maxTimeout time.Duration, now time.Time) ([]Hanging, error) {
	meta, err := adm.Metadata(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("find hanging transactions: %w", err)
	}
	set := kadm.TopicsSet{}
	for _, t := range meta.Topics {
		if t.Err != nil || t.IsInternal && len(topics) == 0 {
			continue
		}
		for p := range t.Partitions {
			set.Add(t.Topic, p)
		}
	}
	if len(set) == 0 {
		return nil, nil
	}
	described, err := adm.DescribeProducers(ctx, set)
	if err != nil {
		return nil, fmt.Errorf("describe producers: %w", err)
	}
	var candidates []Hanging
	for _, p := range described.SortedProducers() {
		if p.CurrentTxnStartOffset < 0 || now.Sub(time.UnixMilli(p.LastTimestamp)) <= maxTimeout {
			continue
		}
		candidates = append(candidates, Hanging{DescribedProducer: p, Duration: now.Sub(time.UnixMilli(p.LastTimestamp))})
	}
	if len(candidates) == 0 {
		return nil, nil
	}
	open, err := openPartitionsByProducer(ctx, adm)
	if err != nil {
		return nil, err
	}
	var hanging []Hanging
	for _, h := range candidates {
		if !open[h.ProducerID][fmt.Sprintf("%s\x00%d", h.Topic, h.Partition)] {
			hanging = append(hanging, h)
		}
	}
	return hanging, nil
}

// openPartitionsByProducer maps each producer id with an Ongoing (or
// preparing) transaction to that transaction's partitions.
func openPartitionsByProducer(ctx context.Context, adm *kadm.Client) (map[int64]map[string]bool, error) {
	listed, err := adm.ListTransactions(ctx, nil, []string{"Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence"})
	if err != nil {
		return nil, fmt.Errorf("list transactions: %w", err)
	}
	out := map[int64]map[string]bool{}
	ids := listed.TransactionalIDs()
	if len(ids) == 0 {
		return out, nil
	}
	described, err := adm.DescribeTransactions(ctx, ids...)
	if err != nil {
		return nil, fmt.Errorf("describe transactions: %w", err)
	}
	described.Each(func(d kadm.DescribedTransaction) {
		if out[d.ProducerID] == nil {
			out[d.ProducerID] = map[string]bool{}
		}
		d.Topics.Each(func(t string, p int32) { out[d.ProducerID][fmt.Sprintf("%s\x00%d", t, p)] = true })
	})
	return out, nil
}

// WriteHanging prints kafka-transactions.sh find-hanging's columns.
func WriteHanging(w io.Writer, hanging []Hanging) {
	sort.Slice(hanging, func(i, j int) bool { return hanging[i].Less(&hanging[j].DescribedProducer) })
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "Topic\tPartition\tProducerId\tProducerEpoch\tCoordinatorEpoch\tStartOffset\tLastTimestamp\tDuration(min)")
	for _, h := range hanging {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", h.Topic, h.Partition, h.ProducerID, h.ProducerEpoch, h.CoordinatorEpoch,
			h.CurrentTxnStartOffset, h.LastTimestamp, int64(h.Duration/time.Minute))
	}
	tw.Flush()
}
