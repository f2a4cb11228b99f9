package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/api"
	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/forward"
	"github.com/ferry-mq/ferry/server/txn"
)

// txnAdmin serves the admin page's transactions (api.TxnAdmin) as
// kafka-transactions.sh list and abort do: this broker's coordinator and
// partitions in process, the other brokers' over the inter-broker client
// (ListTransactions, DescribeTransactions, DescribeProducers,
// WriteTxnMarkers by broker id), never through this broker's own Kafka
// listener.
type txnAdmin struct {
	self   int32
	broker *server.Broker
	coord  *txn.Coordinator
	peers  *forward.Forwarder // nil on a single node
}

func (a *txnAdmin) others() []int32 {
	if a.peers == nil {
		return nil
	}
	view, ok := a.broker.Cluster()
	if !ok {
		return nil
	}
	var ids []int32
	for _, b := range view.Brokers {
		if b.ID != a.self {
			ids = append(ids, b.ID)
		}
	}
	return ids
}

func (a *txnAdmin) Transactions(ctx context.Context) (api.TransactionsView, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	view := api.TransactionsView{Transactions: []api.TransactionInfo{}}
	now := time.Now().UnixMilli()
	for _, t := range a.coord.List(txn.ListFilter{}) {
		info := api.TransactionInfo{TransactionalID: t.ID, Coordinator: a.self, State: t.State.String(),
			ProducerID: t.ProducerID, ProducerEpoch: t.ProducerEpoch, TimeoutMs: t.TimeoutMs, StartTimestamp: t.StartMs}
		for _, tp := range t.Partitions {
			info.Partitions = append(info.Partitions, api.OpenPartitionTxn{Topic: tp.Topic, Partition: tp.Partition})
		}
		view.Transactions = append(view.Transactions, info)
	}
	var failed []error
	for _, id := range a.others() {
		infos, err := a.remoteTransactions(ctx, id)
		if err != nil {
			failed = append(failed, fmt.Errorf("broker %d: %w", id, err))
			continue
		}
		view.Transactions = append(view.Transactions, infos...)
	}
	if len(failed) > 0 && len(view.Transactions) == 0 {
		return view, errors.Join(failed...)
	}
	sort.Slice(view.Transactions, func(i, j int) bool {
		return view.Transactions[i].TransactionalID < view.Transactions[j].TransactionalID
	})
	for i := range view.Transactions {
		t := &view.Transactions[i]
		if t.StartTimestamp > 0 {
			t.AgeMs = max(now-t.StartTimestamp, 0)
		}
		if t.Partitions == nil {
			t.Partitions = []api.OpenPartitionTxn{}
		}
		for j := range t.Partitions {
			p := &t.Partitions[j]
			p.ProducerID, p.ProducerEpoch, p.StartOffset = t.ProducerID, t.ProducerEpoch, -1
			if st, err := a.producer(ctx, p.Topic, p.Partition, t.ProducerID); err == nil {
				p.StartOffset, p.CoordinatorEpoch, p.LastTimestamp, p.ProducerEpoch =
					st.CurrentTxnStartOffset, st.CoordinatorEpoch, st.LastTimestamp, st.ProducerEpoch
			}
		}
	}
	return view, nil
}

// remoteTransactions is broker id's coordinator's transactions.
func (a *txnAdmin) remoteTransactions(ctx context.Context, id int32) ([]api.TransactionInfo, error) {
	lresp, err := a.peers.Request(ctx, id, kmsg.NewPtrListTransactionsRequest())
	if err != nil {
		return nil, err
	}
	listed := lresp.(*kmsg.ListTransactionsResponse)
	if err := kerr.ErrorForCode(listed.ErrorCode); err != nil {
		return nil, err
	}
	if len(listed.TransactionStates) == 0 {
		return nil, nil
	}
	dreq := kmsg.NewPtrDescribeTransactionsRequest()
	for _, s := range listed.TransactionStates {
		dreq.TransactionalIDs = append(dreq.TransactionalIDs, s.TransactionalID)
	}
	dresp, err := a.peers.Request(ctx, id, dreq)
	if err != nil {
		return nil, err
	}
	var out []api.TransactionInfo
	for _, d := range dresp.(*kmsg.DescribeTransactionsResponse).TransactionStates {
		if d.ErrorCode != 0 {
			continue // moved to another coordinator meanwhile
		}
		info := api.TransactionInfo{TransactionalID: d.TransactionalID, Coordinator: id, State: d.State,
			ProducerID: d.ProducerID, ProducerEpoch: d.ProducerEpoch, TimeoutMs: d.TimeoutMillis, StartTimestamp: d.StartTimestamp}
		for _, t := range d.Topics {
			for _, p := range t.Partitions {
				info.Partitions = append(info.Partitions, api.OpenPartitionTxn{Topic: t.Topic, Partition: p})
			}
		}
		out = append(out, info)
	}
	return out, nil
}

// leaderOf is the partition's leader in the controller's view, or this
// broker on a single node.
func (a *txnAdmin) leaderOf(topic string, partition int32) int32 {
	if a.peers == nil {
		return a.self
	}
	if view, ok := a.broker.Cluster(); ok {
		if pv, ok := view.Partition(topic, partition); ok {
			return pv.Leader
		}
	}
	return -1
}

// producer is the partition leader's state of producerID.
func (a *txnAdmin) producer(ctx context.Context, topic string, partition int32, producerID int64) (server.ProducerState, error) {
	states, err := a.producers(ctx, topic, partition)
	if err != nil {
		return server.ProducerState{}, err
	}
	for _, st := range states {
		if st.ProducerID == producerID {
			return st, nil
		}
	}
	return server.ProducerState{}, fmt.Errorf("%s-%d: no state of producer %d", topic, partition, producerID)
}

func (a *txnAdmin) producers(ctx context.Context, topic string, partition int32) ([]server.ProducerState, error) {
	leader := a.leaderOf(topic, partition)
	switch {
	case leader == a.self:
		return a.broker.Producers(topic, partition)
	case leader < 0:
		return nil, fmt.Errorf("%w: %s-%d", server.ErrLeaderNotAvailable, topic, partition)
	}
	req := kmsg.NewPtrDescribeProducersRequest()
	rt := kmsg.NewDescribeProducersRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{partition}
	req.Topics = append(req.Topics, rt)
	resp, err := a.peers.Request(ctx, leader, req)
	if err != nil {
		return nil, err
	}
	var out []server.ProducerState
	for _, t := range resp.(*kmsg.DescribeProducersResponse).Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return nil, err
			}
			for _, ap := range p.ActiveProducers {
				out = append(out, server.ProducerState{ProducerID: ap.ProducerID, ProducerEpoch: int16(ap.ProducerEpoch),
					LastSequence: ap.LastSequence, LastTimestamp: ap.LastTimestamp, CoordinatorEpoch: ap.CoordinatorEpoch,
					CurrentTxnStartOffset: ap.CurrentTxnStartOffset})
			}
		}
	}
	return out, nil
}

func (a *txnAdmin) AbortTransaction(ctx context.Context, req api.AbortTransactionRequest) (api.AbortedTransaction, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	states, err := a.producers(ctx, req.Topic, req.Partition)
	if err != nil {
		return api.AbortedTransaction{}, err
	}
	var st *server.ProducerState
	for i := range states {
		if states[i].CurrentTxnStartOffset == req.StartOffset {
			st = &states[i]
		}
	}
	if st == nil {
		return api.AbortedTransaction{}, fmt.Errorf("%w: no open transaction starts at offset %d of %s-%d",
			api.ErrNoOpenTransaction, req.StartOffset, req.Topic, req.Partition)
	}
	marker := server.TxnMarker{ProducerID: st.ProducerID, ProducerEpoch: st.ProducerEpoch, CoordinatorEpoch: st.CoordinatorEpoch,
		Topic: req.Topic, Partition: req.Partition}
	if leader := a.leaderOf(req.Topic, req.Partition); leader == a.self {
		err = a.broker.WriteTxnMarkers(ctx, []server.TxnMarker{marker})[0]
	} else {
		err = a.remoteAbort(ctx, leader, marker)
	}
	if err != nil {
		return api.AbortedTransaction{}, fmt.Errorf("abort producer %d on %s-%d: %w", st.ProducerID, req.Topic, req.Partition, err)
	}
	return api.AbortedTransaction{Topic: req.Topic, Partition: req.Partition, ProducerID: st.ProducerID, ProducerEpoch: st.ProducerEpoch}, nil
}

func (a *txnAdmin) remoteAbort(ctx context.Context, leader int32, m server.TxnMarker) error {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	rm := kmsg.NewWriteTxnMarkersRequestMarker()
	rm.ProducerID, rm.ProducerEpoch, rm.CoordinatorEpoch, rm.Committed = m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch, false
	rt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	rt.Topic, rt.Partitions = m.Topic, []int32{m.Partition}
	rm.Topics = append(rm.Topics, rt)
	req.Markers = append(req.Markers, rm)
	resp, err := a.peers.Request(ctx, leader, req)
	if err != nil {
		return err
	}
	for _, mk := range resp.(*kmsg.WriteTxnMarkersResponse).Markers {
		for _, t := range mk.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
