package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// TxnAdmin is what the admin page's transaction view needs from the
// cluster: the coordinators' transactions and an operator's abort of one
// partition's open transaction, as kafka-transactions.sh does them
// (cmd/ferry implements it: this broker's coordinator and partitions in
// process, the others' over the inter-broker client).
type TxnAdmin interface {
	Transactions(ctx context.Context) (TransactionsView, error)
	AbortTransaction(ctx context.Context, req AbortTransactionRequest) (AbortedTransaction, error)
}

// TransactionsView is GET /admin/transactions's answer.
type TransactionsView struct {
	// Transactions are every coordinator's, but the Empty and completed
	// ones' partitions are empty.
	Transactions []TransactionInfo `json:"transactions"`
}

// TransactionInfo is one transactional id at its coordinator.
type TransactionInfo struct {
	TransactionalID string `json:"transactional_id"`
	Coordinator     int32  `json:"coordinator"`
	State           string `json:"state" enums:"Empty,Ongoing,PrepareCommit,PrepareAbort,CompleteCommit,CompleteAbort,Dead,PrepareEpochFence"`
	ProducerID      int64  `json:"producer_id"`
	ProducerEpoch   int16  `json:"producer_epoch"`
	TimeoutMs       int32  `json:"timeout_ms"`
	// StartTimestamp is when the transaction started (ms), -1 when none
	// is open; AgeMs is how long ago.
	StartTimestamp int64              `json:"start_timestamp"`
	AgeMs          int64              `json:"age_ms"`
	Partitions     []OpenPartitionTxn `json:"partitions"`
}

// OpenPartitionTxn is a producer's open transaction on one partition, as
// the partition's leader describes it.
type OpenPartitionTxn struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// StartOffset is the transaction's first offset there (what
	// POST /admin/transactions/abort takes); -1 when the leader has not
	// seen a record of it yet.
	StartOffset      int64 `json:"start_offset"`
	ProducerID       int64 `json:"producer_id"`
	ProducerEpoch    int16 `json:"producer_epoch"`
	CoordinatorEpoch int32 `json:"coordinator_epoch"`
	LastTimestamp    int64 `json:"last_timestamp,omitempty"`
}

// AbortTransactionRequest names the open transaction to abort on one
// partition, as kafka-transactions.sh abort --start-offset does.
type AbortTransactionRequest struct {
	Topic       string `json:"topic" example:"orders"`
	Partition   int32  `json:"partition"`
	StartOffset int64  `json:"start_offset"`
}

// AbortedTransaction is the producer whose transaction was aborted.
type AbortedTransaction struct {
	Topic         string `json:"topic"`
	Partition     int32  `json:"partition"`
	ProducerID    int64  `json:"producer_id"`
	ProducerEpoch int16  `json:"producer_epoch"`
}

// ErrNoOpenTransaction: no open transaction starts at the offset given.
var ErrNoOpenTransaction = errors.New("no open transaction there")

func (g *Gateway) requireTxnAdmin(w http.ResponseWriter) bool {
	if g.cfg.TxnAdmin == nil {
		writeError(w, http.StatusServiceUnavailable, codeUnavailable, "this node does not serve transaction administration")
		return false
	}
	return true
}

// listTransactions serves GET /admin/transactions.
//
//	@Summary	Transactions of every coordinator, with their partitions and age
//	@Tags		admin
//	@Produce	json
//	@Success	200		{object}	TransactionsView
//	@Failure	403		{object}	errorBody	"40301: DESCRIBE on the cluster is not allowed"
//	@Failure	503		{object}	errorBody	"50301: transaction administration is not served here, or the cluster did not answer"
//	@Router		/admin/transactions [get]
func (g *Gateway) listTransactions(w http.ResponseWriter, r *http.Request) {
	if !g.requireTxnAdmin(w) {
		return
	}
	view, err := g.cfg.TxnAdmin.Transactions(r.Context())
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, codeUnavailable, "list transactions: "+err.Error())
		return
	}
	if view.Transactions == nil {
		view.Transactions = []TransactionInfo{}
	}
	writeJSON(w, http.StatusOK, typeJSON, view)
}

// abortTransaction serves POST /admin/transactions/abort.
//
//	@Summary		Abort a partition's open (hanging) transaction, as kafka-transactions.sh abort
//	@Description	Writes an abort marker for the producer whose open transaction starts at start_offset of the partition (WriteTxnMarkers to its leader), so read_committed readers move past it. Meant for a hanging transaction its coordinator no longer knows; aborting a live one makes its producer fail.
//	@Tags			admin
//	@Accept			json
//	@Produce		json
//	@Param			body	body		AbortTransactionRequest	true	"the partition and the transaction's first offset there"
//	@Success		200		{object}	AbortedTransaction
//	@Failure		400		{object}	errorBody	"40001: the body is not JSON of this shape"
//	@Failure		403		{object}	errorBody	"40301: ALTER on the cluster is not allowed"
//	@Failure		404		{object}	errorBody	"40404: no open transaction starts at that offset"
//	@Failure		503		{object}	errorBody	"50301: transaction administration is not served here, or the leader did not answer"
//	@Router			/admin/transactions/abort [post]
func (g *Gateway) abortTransaction(w http.ResponseWriter, r *http.Request) {
	if !g.requireTxnAdmin(w) {
		return
	}
	var req AbortTransactionRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || strings.TrimSpace(req.Topic) == "" || req.Partition < 0 || req.StartOffset < 0 {
		writeError(w, http.StatusBadRequest, codeMalformed, `send {"topic":…,"partition":…,"start_offset":…}`)
		return
	}
	aborted, err := g.cfg.TxnAdmin.AbortTransaction(r.Context(), req)
	switch {
	case errors.Is(err, ErrNoOpenTransaction):
		writeError(w, http.StatusNotFound, codeNotFound, err.Error())
		return
	case err != nil:
		writeError(w, http.StatusServiceUnavailable, codeUnavailable, fmt.Sprintf("abort: %v", err))
		return
	}
	writeJSON(w, http.StatusOK, typeJSON, aborted)
}
