package kafka

// DescribeTransactions (key 65), version 0 (KIP-664).
//
// Each id is described by its coordinator: an id this broker does not
// coordinate answers NOT_COORDINATOR (the admin client looks the
// coordinator up first), an unknown one TRANSACTIONAL_ID_NOT_FOUND.
//
// ACLs: DESCRIBE on each transactional id, else
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED for it.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/auth"
)

func (s *Server) handleDescribeTransactions(ctx context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.ProducerEpoch, st.StartTimestamp = id, -1, -1, -1
		if !s.authorized(ctx, auth.OpDescribe, auth.ResourceTransactionalID, id) {
			st.ErrorCode = codeTxnIDAuthFailed
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		t, code := s.cfg.Txns.Describe(id)
		st.ErrorCode = code
		if code == 0 {
			st.State, st.TimeoutMillis, st.StartTimestamp = t.State.String(), t.TimeoutMs, t.StartMs
			st.ProducerID, st.ProducerEpoch = t.ProducerID, t.ProducerEpoch
			for i := 0; i < len(t.Partitions); {
				rt := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
				rt.Topic = t.Partitions[i].Topic
				for ; i < len(t.Partitions) && t.Partitions[i].Topic == rt.Topic; i++ {
					rt.Partitions = append(rt.Partitions, t.Partitions[i].Partition)
				}
				st.Topics = append(st.Topics, rt)
			}
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp
}
