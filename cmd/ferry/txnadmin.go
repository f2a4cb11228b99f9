package main

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/api"
	"github.com/ferry-mq/ferry/cmd/ferry/internal/kcli"
)

// txnAdmin serves the admin page's transactions (api.TxnAdmin) as
// kafka-transactions.sh does, over a Kafka client of this broker's own
// listener: on a cluster it reaches every coordinator and leader.
type txnAdmin struct {
	cl         *kgo.Client
	adm        *kadm.Client
	maxTimeout time.Duration // transaction.max.timeout.ms, for find-hanging
}

func newTxnAdmin(seed string, dial func(ctx context.Context, network, addr string) (net.Conn, error), maxTimeout time.Duration) (*txnAdmin, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(seed), kgo.ClientID("ferry-admin-transactions")}
	if dial != nil {
		opts = append(opts, kgo.Dialer(dial))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	return &txnAdmin{cl: cl, adm: kadm.NewClient(cl), maxTimeout: maxTimeout}, nil
}

func (a *txnAdmin) Close() { a.cl.Close() }

func (a *txnAdmin) Transactions(ctx context.Context, hanging bool) (api.TransactionsView, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	listed, err := kcli.ListTransactions(ctx, a.adm, nil, nil)
	if err != nil && len(listed) == 0 {
		return api.TransactionsView{}, err
	}
	ids := make([]string, 0, len(listed))
	for _, l := range listed {
		ids = append(ids, l.TxnID)
	}
	view := api.TransactionsView{Transactions: []api.TransactionInfo{}}
	if len(ids) == 0 {
		return a.withHanging(ctx, view, hanging)
	}
	described, err := a.adm.DescribeTransactions(ctx, ids...)
	if err != nil && len(described) == 0 {
		return api.TransactionsView{}, err
	}
	// The leaders' view of each open partition gives its start offset,
	// which an abort names.
	open := kadm.TopicsSet{}
	for _, d := range described {
		for topic, ps := range d.Topics {
			for p := range ps {
				open.Add(topic, p)
			}
		}
	}
	producers := map[string]map[int32]map[int64]kadm.DescribedProducer{}
	if len(open) > 0 {
		if dp, err := a.adm.DescribeProducers(ctx, open); err == nil {
			dp.EachProducer(func(p kadm.DescribedProducer) {
				if producers[p.Topic] == nil {
					producers[p.Topic] = map[int32]map[int64]kadm.DescribedProducer{}
				}
				if producers[p.Topic][p.Partition] == nil {
					producers[p.Topic][p.Partition] = map[int64]kadm.DescribedProducer{}
				}
				producers[p.Topic][p.Partition][p.ProducerID] = p
			})
		}
	}
	now := time.Now().UnixMilli()
	for _, d := range described.Sorted() {
		if d.Err != nil {
			continue
		}
		info := api.TransactionInfo{TransactionalID: d.TxnID, Coordinator: d.Coordinator, State: d.State,
			ProducerID: d.ProducerID, ProducerEpoch: d.ProducerEpoch, TimeoutMs: d.TimeoutMillis,
			StartTimestamp: d.StartTimestamp, Partitions: []api.OpenPartitionTxn{}}
		if d.StartTimestamp > 0 {
			info.AgeMs = max(now-d.StartTimestamp, 0)
		}
		for _, tps := range d.Topics.Sorted() {
			for _, partition := range tps.Partitions {
				op := api.OpenPartitionTxn{Topic: tps.Topic, Partition: partition, StartOffset: -1,
					ProducerID: d.ProducerID, ProducerEpoch: d.ProducerEpoch}
				if p, ok := producers[tps.Topic][partition][d.ProducerID]; ok {
					op.StartOffset, op.CoordinatorEpoch, op.LastTimestamp = p.CurrentTxnStartOffset, p.CoordinatorEpoch, p.LastTimestamp
					op.ProducerEpoch = p.ProducerEpoch
				}
				info.Partitions = append(info.Partitions, op)
			}
		}
		view.Transactions = append(view.Transactions, info)
	}
	return a.withHanging(ctx, view, hanging)
}

func (a *txnAdmin) withHanging(ctx context.Context, view api.TransactionsView, hanging bool) (api.TransactionsView, error) {
	if !hanging {
		return view, nil
	}
	found, err := kcli.FindHanging(ctx, a.adm, nil, a.maxTimeout, time.Now())
	if err != nil {
		return view, fmt.Errorf("find hanging transactions: %w", err)
	}
	view.Hanging = []api.OpenPartitionTxn{}
	for _, h := range found {
		view.Hanging = append(view.Hanging, api.OpenPartitionTxn{Topic: h.Topic, Partition: h.Partition,
			StartOffset: h.CurrentTxnStartOffset, ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch,
			CoordinatorEpoch: h.CoordinatorEpoch, LastTimestamp: h.LastTimestamp})
	}
	return view, nil
}

func (a *txnAdmin) AbortTransaction(ctx context.Context, req api.AbortTransactionRequest) (api.AbortedTransaction, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	spec, err := kcli.AbortSpecFromStart(ctx, a.adm, req.Topic, req.Partition, req.StartOffset)
	if err != nil {
		return api.AbortedTransaction{}, fmt.Errorf("%w: %v", api.ErrNoOpenTransaction, err)
	}
	if err := kcli.AbortTransaction(ctx, a.adm, spec); err != nil {
		return api.AbortedTransaction{}, err
	}
	return api.AbortedTransaction{Topic: spec.Topic, Partition: spec.Partition, ProducerID: spec.ProducerID, ProducerEpoch: spec.ProducerEpoch}, nil
}
