package kafka

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ferry-mq/ferry/server"
)

// errorCode maps a core error with the core's one table (server.KafkaCode).
func errorCode(err error) int16 { return server.KafkaCode(err) }

// errorMessage is a response's nullable message: the core's wrapped text,
// which names the topic, partition or value that was wrong.
func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	m := err.Error()
	return &m
}

// Listener-level codes the core's table does not produce.
var (
	codeInvalidRequest       = kerr.InvalidRequest.Code
	codeInvalidRequiredAcks  = kerr.InvalidRequiredAcks.Code
	codeUnknownTopicOrPart   = kerr.UnknownTopicOrPartition.Code
	codeUnknownTopicID       = kerr.UnknownTopicID.Code
	codeInvalidTopic         = kerr.InvalidTopicException.Code
	codeUnknownLeaderEpoch   = kerr.UnknownLeaderEpoch.Code
	codeFencedLeaderEpoch    = kerr.FencedLeaderEpoch.Code
	codeInvalidRecord        = kerr.InvalidRecord.Code
	codeInvalidReplicaAssign = kerr.InvalidReplicaAssignment.Code
	codeUnsupportedVersion   = kerr.UnsupportedVersion.Code
	codeUnknownServerError   = kerr.UnknownServerError.Code
)

// checkLeaderEpoch applies Kafka's CurrentLeaderEpoch check (KIP-320):
// -1 skips it, an older epoch is fenced, a newer one unknown.
func checkLeaderEpoch(current, ours int32) int16 {
	switch {
	case current < 0 || current == ours:
		return 0
	case current < ours:
		return codeFencedLeaderEpoch
	}
	return codeUnknownLeaderEpoch
}
