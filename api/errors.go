package api

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/ferry-mq/ferry/replication"
	"github.com/ferry-mq/ferry/server"
)

// Error codes: HTTP status × 100 + a number, as Confluent's REST Proxy does.
const (
	codeMalformed          = 40001 // body is not valid JSON or not the expected shape
	codeBadParam           = 40002 // a query or path parameter is not valid
	codeBodyUnreadable     = 40003 // the body is truncated or its chunked encoding is broken
	codeCrossOrigin        = 40301 // a browser request from another origin that would change state
	codeHostNotAllowed     = 40302 // a browser request naming a Host not allowed (DNS rebinding)
	codeInternalTopic      = 40303 // a change clients may not make to an internal topic
	codeTopicNotFound      = 40401
	codePartitionNotFound  = 40402
	codeRecordNotFound     = 40403 // an offset listed by the client holds no record
	codeNotFound           = 40404
	codeMethodNotAllowed   = 40501
	codeBodyTimeout        = 40801 // the body did not arrive within the read timeout
	codeTopicExists        = 40901
	codeReassigning        = 40902 // a partition reassignment of the topic is in progress
	codeTooLarge           = 41301
	codeUnsupportedType    = 41501
	codeOffsetOutOfRange   = 41601
	codeInvalidTopic       = 42201
	codeInvalidPartitions  = 42202
	codeInvalidReplication = 42203
	codeInvalidConfig      = 42204
	codeInvalidRecord      = 42205
	codeInvalidTimestamp   = 42206
	codePartitionLimit     = 42207 // the broker holds max.partitions partitions
	codeInternal           = 50001
	codeStorage            = 50002
	codeUnavailable        = 50301
	codeNotEnoughReplicas  = 50302 // fewer in-sync replicas than min.insync.replicas
	codeAcksTimedOut       = 50303 // appended, not acknowledged by the replicas in time
	codeNotLeader          = 50304 // this node does not lead the partition
	codeNoLeader           = 50306 // the partition has no live leader (an election is in progress)
)

// retryAfterSeconds is the Retry-After of every 503: leaders are
// elected, replicas return and nodes restart within seconds.
const retryAfterSeconds = "1"

// httpErrors is the one table from core errors to HTTP answers.
var httpErrors = []struct {
	err    error
	status int
	code   int
}{
	{server.ErrInternalTopic, http.StatusForbidden, codeInternalTopic},
	{server.ErrUnknownTopic, http.StatusNotFound, codeTopicNotFound},
	{server.ErrUnknownPartition, http.StatusNotFound, codePartitionNotFound},
	{server.ErrTopicExists, http.StatusConflict, codeTopicExists},
	{replication.ErrTopicReassigning, http.StatusConflict, codeReassigning},
	{server.ErrRecordTooLarge, http.StatusRequestEntityTooLarge, codeTooLarge},
	{server.ErrOffsetOutOfRange, http.StatusRequestedRangeNotSatisfiable, codeOffsetOutOfRange},
	{server.ErrInvalidTopic, http.StatusUnprocessableEntity, codeInvalidTopic},
	{server.ErrInvalidPartitions, http.StatusUnprocessableEntity, codeInvalidPartitions},
	{server.ErrInvalidReplicas, http.StatusUnprocessableEntity, codeInvalidReplication},
	{server.ErrInvalidConfig, http.StatusUnprocessableEntity, codeInvalidConfig},
	{server.ErrInvalidRecord, http.StatusUnprocessableEntity, codeInvalidRecord},
	{server.ErrCorruptMessage, http.StatusUnprocessableEntity, codeInvalidRecord},
	{server.ErrInvalidTimestamp, http.StatusUnprocessableEntity, codeInvalidTimestamp},
	{server.ErrPartitionLimit, http.StatusUnprocessableEntity, codePartitionLimit},
	{server.ErrShuttingDown, http.StatusServiceUnavailable, codeUnavailable},
	{server.ErrNotEnoughReplicasAfterAppend, http.StatusServiceUnavailable, codeNotEnoughReplicas},
	{server.ErrNotEnoughReplicas, http.StatusServiceUnavailable, codeNotEnoughReplicas},
	{server.ErrRequestTimedOut, http.StatusServiceUnavailable, codeAcksTimedOut},
	{server.ErrNotLeader, http.StatusServiceUnavailable, codeNotLeader},
	{server.ErrLeaderNotAvailable, http.StatusServiceUnavailable, codeNoLeader},
	{server.ErrStorage, http.StatusInternalServerError, codeStorage},
}

// errorBody is every error answer's body; the spec calls it Error.
type errorBody struct {
	// ErrorCode is the HTTP status × 100 + a number (REST Proxy's habit).
	ErrorCode int `json:"error_code" example:"40401"`
	// Message says what went wrong and why.
	Message string `json:"message" example:"topic orders does not exist"`
} //	@name	Error

// writeError answers with the JSON error body.
func writeError(w http.ResponseWriter, status, code int, msg string) {
	if rec, ok := w.(errorCodeSetter); ok {
		rec.setErrorCode(code) // for the request log and ferry_request_errors_total
	}
	w.Header().Set("Content-Type", "application/json")
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", retryAfterSeconds)
	}
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(errorBody{ErrorCode: code, Message: msg})
}

// coreErrorStatus is err's status and error code in httpErrors (500 and
// codeInternal for an error it does not list).
func coreErrorStatus(err error) (status, code int) {
	for _, m := range httpErrors {
		if errors.Is(err, m.err) {
			return m.status, m.code
		}
	}
	return http.StatusInternalServerError, codeInternal
}

// writeCoreError maps a core error through httpErrors.
func writeCoreError(w http.ResponseWriter, err error) {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		writeError(w, http.StatusRequestEntityTooLarge, codeTooLarge, err.Error())
		return
	}
	status, code := coreErrorStatus(err)
	writeError(w, status, code, err.Error())
}

// writeJSON encodes v before sending the status, so a value that fails to
// encode answers 500 rather than a success with an empty body.
func writeJSON(w http.ResponseWriter, status int, contentType string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, codeInternal, "encode the answer: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	w.Write(data)
	w.Write([]byte{'\n'})
}
