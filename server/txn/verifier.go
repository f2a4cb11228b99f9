package txn

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
)

// Verifier is KIP-890 part 1's check before a leader appends a
// transactional batch (server.TxnVerifier): this broker's coordinator
// answers for the ids it coordinates; the others' coordinators are asked
// with AddPartitionsToTxn v4 verifyOnly, as Kafka's
// AddPartitionsToTxnManager does.
type Verifier struct {
	Coordinator *Coordinator
	// Peers reaches the other brokers; nil on a single node.
	Peers PeerRequester
}

var (
	_ server.TxnVerifier       = (*Verifier)(nil)
	_ server.TxnPartitionAdder = (*Verifier)(nil)
)

// VerifyTxnPartition implements server.TxnVerifier.
func (v *Verifier) VerifyTxnPartition(ctx context.Context, id string, producerID int64, epoch int16, topic string, partition int32) int16 {
	return v.ask(ctx, id, producerID, epoch, topic, partition, true)
}

// AddTxnPartition implements server.TxnPartitionAdder: the local
// coordinator's AddPartitions, or AddPartitionsToTxn v4 without
// verifyOnly to another broker's, as Kafka 4's AddPartitionsToTxnManager
// does for transaction.version 2.
func (v *Verifier) AddTxnPartition(ctx context.Context, id string, producerID int64, epoch int16, topic string, partition int32) int16 {
	return v.ask(ctx, id, producerID, epoch, topic, partition, false)
}

func (v *Verifier) ask(ctx context.Context, id string, producerID int64, epoch int16, topic string, partition int32, verifyOnly bool) int16 {
	c := v.Coordinator
	code := c.Coordinates(id)
	if code != errNotCoordinator || v.Peers == nil {
		if code != 0 {
			return code
		}
		if !verifyOnly {
			return c.AddLeaderPartitions(ctx, id, producerID, epoch, []TopicPartition{{topic, partition}})
		}
		return c.VerifyTxnPartition(ctx, id, producerID, epoch, topic, partition)
	}
	leader, err := c.CoordinatorOf(id)
	if err != nil {
		return errCoordinatorUnavailable
	}
	if leader == c.broker.BrokerID() {
		return code // the controller named us; the load has not begun
	}
	req := VerifyRequest(id, producerID, epoch, topic, partition)
	req.Transactions[0].VerifyOnly = verifyOnly
	kresp, err := v.Peers.Request(ctx, leader, req)
	if err != nil {
		return errCoordinatorUnavailable
	}
	return verifyAnswer(kresp.(*kmsg.AddPartitionsToTxnResponse), topic, partition)
}

// VerifyRequest is the AddPartitionsToTxn v4 verifyOnly request for one
// partition.
func VerifyRequest(id string, producerID int64, epoch int16, topic string, partition int32) *kmsg.AddPartitionsToTxnRequest {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 4
	tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = id, producerID, epoch, true
	rt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	rt.Topic, rt.Partitions = topic, []int32{partition}
	tx.Topics = append(tx.Topics, rt)
	req.Transactions = append(req.Transactions, tx)
	return req
}

func verifyAnswer(resp *kmsg.AddPartitionsToTxnResponse, topic string, partition int32) int16 {
	if resp.ErrorCode != 0 {
		return resp.ErrorCode
	}
	for _, tx := range resp.Transactions {
		for _, rt := range tx.Topics {
			for _, rp := range rt.Partitions {
				if rt.Topic == topic && rp.Partition == partition {
					return rp.ErrorCode
				}
			}
		}
	}
	return errCoordinatorUnavailable
}
