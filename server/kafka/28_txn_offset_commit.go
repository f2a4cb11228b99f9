package kafka

// TxnOffsetCommit (key 28), versions 0–4 (v4 only allows the
// TRANSACTION_ABORTABLE error, KIP-890), and v5 (KIP-890 part 2; clients
// use it once the cluster's transaction.version is 2): the group's __consumer_offsets partition is added
// to the producer's transaction at its coordinator (the client sends no
// AddOffsetsToTxn) before the commits are written, where v4 only
// verifies it is there.
//
// server/group holds the commits pending per producer until the
// producer's marker reaches the group's __consumer_offsets partition
// (commit: they become the group's offsets; abort: dropped). v3+ carry
// the member's generation (KIP-447), checked when given.
// PRODUCER_FENCED is answered INVALID_PRODUCER_EPOCH below v3 (KIP-588).
//
// ACLs as Kafka: WRITE on the transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), READ on the group
// (GROUP_AUTHORIZATION_FAILED), READ on each topic
// (TOPIC_AUTHORIZATION_FAILED for those partitions), each for every
// partition of the request.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/auth"
)

func (s *Server) handleTxnOffsetCommit(ctx context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.TxnOffsetCommitRequest)
	var denied int16
	switch {
	case !s.authorized(ctx, auth.OpWrite, auth.ResourceTransactionalID, req.TransactionalID):
		denied = codeTxnIDAuthFailed
	case !s.authorizedGroup(ctx, auth.OpRead, req.Group):
		denied = codeGroupAuthFailed
	}
	if denied != 0 {
		return txnCommitAnswer(req, func(string) int16 { return denied })
	}
	refused := map[string]bool{}
	allowed := req.Topics[:0:0]
	for _, t := range req.Topics {
		if s.authorizedTopic(ctx, auth.OpRead, t.Topic) {
			allowed = append(allowed, t)
		} else {
			refused[t.Topic] = true
		}
	}
	if len(refused) > 0 {
		// Kafka answers the whole request when a topic is refused.
		return txnCommitAnswer(req, func(topic string) int16 {
			if refused[topic] {
				return codeTopicAuthFailed
			}
			return codeOperationNotAttempted
		})
	}
	resp := s.groups.HandleTxnOffsetCommit(ctx, req)
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			p := &resp.Topics[i].Partitions[j]
			p.ErrorCode = fencedCode(p.ErrorCode, req.Version < 3)
		}
	}
	return resp
}

// txnCommitAnswer answers every partition of req with code(topic).
func txnCommitAnswer(req *kmsg.TxnOffsetCommitRequest, code func(topic string) int16) *kmsg.TxnOffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code(t.Topic)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
