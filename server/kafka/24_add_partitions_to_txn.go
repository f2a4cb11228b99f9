package kafka

// AddPartitionsToTxn (key 24), versions 0–5 (v5 only allows the
// TRANSACTION_ABORTABLE error, KIP-890 part 2, which ferry never returns).
//
// v0–v3 come from a transactional producer: its partitions join its
// ongoing transaction at the coordinator (server/txn), written to
// __transaction_state before the answer (in this broker's log only, for
// partitions joining a transaction already ongoing: their leaders'
// verification waits for the replicas). v4+ carry batches of
// transactions and come from brokers: with verifyOnly (KIP-890 part 1) a
// partition leader asks whether a partition is already in a producer's
// transaction, and nothing is written. PRODUCER_FENCED is answered
// INVALID_PRODUCER_EPOCH below v2 (KIP-588).
//
// ACLs as Kafka: v4+ needs CLUSTER_ACTION on the cluster, else
// CLUSTER_AUTHORIZATION_FAILED for the whole request; each transaction
// WRITE on its transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
// and WRITE on every topic (TOPIC_AUTHORIZATION_FAILED for those,
// OPERATION_NOT_ATTEMPTED for the others). Unknown topics or partitions
// answer UNKNOWN_TOPIC_OR_PARTITION, the others OPERATION_NOT_ATTEMPTED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/auth"
	"github.com/ferry-mq/ferry/server/txn"
)

var codeOperationNotAttempted = kerr.OperationNotAttempted.Code

// txnTopics is one transaction's partitions, in request order.
type txnTopics []txnTopic

type txnTopic struct {
	topic      string
	partitions []int32
}

func (s *Server) handleAddPartitionsToTxn(ctx context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.AddPartitionsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if req.Version < 4 {
		var topics txnTopics
		for _, t := range req.Topics {
			topics = append(topics, txnTopic{t.Topic, t.Partitions})
		}
		codes := s.addTxnPartitions(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, topics, false, req.Version < 2, true)
		for i, t := range topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t.topic
			for j, p := range t.partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, codes[i][j]
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	if !s.authorizedCluster(ctx, auth.OpClusterAction) {
		resp.ErrorCode = codeClusterAuthFailed
		return resp
	}
	for _, tx := range req.Transactions {
		var topics txnTopics
		for _, t := range tx.Topics {
			topics = append(topics, txnTopic{t.Topic, t.Partitions})
		}
		codes := s.addTxnPartitions(ctx, tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, topics, tx.VerifyOnly, false, false)
		rtx := kmsg.NewAddPartitionsToTxnResponseTransaction()
		rtx.TransactionalID = tx.TransactionalID
		for i, t := range topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			rt.Topic = t.topic
			for j, p := range t.partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				rp.Partition, rp.ErrorCode = p, codes[i][j]
				rt.Partitions = append(rt.Partitions, rp)
			}
			rtx.Topics = append(rtx.Topics, rt)
		}
		resp.Transactions = append(resp.Transactions, rtx)
	}
	return resp
}

// addTxnPartitions checks one transaction's partitions and, when every
// one passes, adds (or, verifyOnly, verifies) them at the coordinator; it
// returns one code per partition, in request order. A producer's
// (fromProducer: v0–v3) partitions joining an ongoing transaction are
// answered before their record is acknowledged (AddProducerPartitions).
func (s *Server) addTxnPartitions(ctx context.Context, id string, pid int64, epoch int16, topics txnTopics, verifyOnly, oldFenced, fromProducer bool) [][]int16 {
	codes := make([][]int16, len(topics))
	all := func(code int16) [][]int16 {
		for i, t := range topics {
			codes[i] = make([]int16, len(t.partitions))
			for j := range codes[i] {
				codes[i][j] = code
			}
		}
		return codes
	}
	if !s.authorized(ctx, auth.OpWrite, auth.ResourceTransactionalID, id) {
		return all(codeTxnIDAuthFailed)
	}
	failed := false
	for i, t := range topics {
		codes[i] = make([]int16, len(t.partitions))
		var code int16
		if !s.authorizedTopic(ctx, auth.OpWrite, t.topic) {
			code = codeTopicAuthFailed
		} else if n, err := s.broker.PartitionCountInCluster(t.topic); err != nil {
			code = codeUnknownTopicOrPart
		} else {
			for j, p := range t.partitions {
				if p < 0 || p >= n {
					codes[i][j], failed = codeUnknownTopicOrPart, true
				}
			}
		}
		if code != 0 {
			failed = true
			for j := range codes[i] {
				codes[i][j] = code
			}
		}
	}
	if failed {
		for i := range codes {
			for j := range codes[i] {
				if codes[i][j] == 0 {
					codes[i][j] = codeOperationNotAttempted
				}
			}
		}
		return codes
	}
	var tps []txn.TopicPartition
	for _, t := range topics {
		for _, p := range t.partitions {
			tps = append(tps, txn.TopicPartition{Topic: t.topic, Partition: p})
		}
	}
	if verifyOnly {
		got := s.cfg.Txns.VerifyPartitions(ctx, id, pid, epoch, tps)
		k := 0
		for i := range codes {
			for j := range codes[i] {
				codes[i][j] = got[k]
				k++
			}
		}
		return codes
	}
	if fromProducer {
		return all(fencedCode(s.cfg.Txns.AddProducerPartitions(ctx, id, pid, epoch, tps), oldFenced))
	}
	return all(fencedCode(s.cfg.Txns.AddLeaderPartitions(ctx, id, pid, epoch, tps), oldFenced))
}

// fencedCode answers PRODUCER_FENCED as INVALID_PRODUCER_EPOCH to request
// versions from before KIP-588, whose clients do not know it.
func fencedCode(code int16, old bool) int16 {
	if old && code == kerr.ProducerFenced.Code {
		return kerr.InvalidProducerEpoch.Code
	}
	return code
}
