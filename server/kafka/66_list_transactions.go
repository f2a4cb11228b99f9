package kafka

// ListTransactions (key 66), versions 0–1 (KIP-664; v1 adds the duration
// filter of KIP-994).
//
// Lists the transactional ids this broker coordinates (the admin client
// asks every broker), filtered by state names, producer ids and, v1+,
// transactions open at least DurationFilterMillis. Unknown state names
// are returned in UnknownStateFilters, as Kafka does.
//
// ACLs: only the ids the principal may DESCRIBE are listed.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/auth"
	"github.com/ferry-mq/ferry/server/txn"
)

func (s *Server) handleListTransactions(ctx context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.ListTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	var f txn.ListFilter
	for _, name := range req.StateFilters {
		st, ok := txn.ParseState(name)
		if !ok {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, name)
			continue
		}
		f.States = append(f.States, st)
	}
	if len(req.StateFilters) > 0 && len(f.States) == 0 {
		return resp // every filter unknown: nothing matches
	}
	f.ProducerIDs = req.ProducerIDFilters
	if req.Version >= 1 && req.DurationFilterMillis > 0 {
		f.MinDuration = time.Duration(req.DurationFilterMillis) * time.Millisecond
	}
	for _, t := range s.cfg.Txns.List(f) {
		if !s.allows(ctx, auth.OpDescribe, auth.ResourceTransactionalID, t.ID) { // a filter: no audit line per id
			continue
		}
		st := kmsg.NewListTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.TransactionState = t.ID, t.ProducerID, t.State.String()
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp
}
