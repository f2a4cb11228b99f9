package api

import (
	"net/http"

	"github.com/ferry-mq/ferry/replication/controller"
	"github.com/ferry-mq/ferry/server"
)

// Preferred leader election over HTTP: the same election as Kafka's
// ElectLeaders (ferry leader-election, kafka-leader-election.sh), run by
// the core's Admin, which asks the controller wherever it is. This file
// only encodes it.

// ElectionResult is one partition's outcome: ErrorCode 0 elected; 84
// (ELECTION_NOT_NEEDED) its preferred replica leads already; 80
// (PREFERRED_LEADER_NOT_AVAILABLE) it is not live or not in sync; 3 no
// such partition.
type ElectionResult struct {
	Topic     string `json:"topic" example:"orders"`
	Partition int32  `json:"partition" example:"0"`
	Elected   bool   `json:"elected"`
	ErrorCode int16  `json:"error_code" example:"0"`
	Message   string `json:"message,omitempty"`
}

// ElectionPartition names a partition in an election request.
type ElectionPartition struct {
	Topic     string `json:"topic" example:"orders"`
	Partition int32  `json:"partition" example:"0"`
}

type electionBody struct {
	// Partitions to elect for; absent or null: every partition.
	Partitions []ElectionPartition `json:"partitions"`
}

type electionAnswer struct {
	Results []ElectionResult `json:"results"`
}

// preferredLeaderElection serves POST /admin/preferred-leader-election.
//
//	@Summary		Give partitions back to their preferred leaders
//	@Description	Runs a preferred leader election (Kafka's ElectLeaders, PREFERRED): each named partition, or every partition without a body, is led again by its first assigned replica when that replica is live and in the ISR, as after a failover. The controller does it wherever it runs; the answer comes once the elections are written. A single node's partitions have one replica each: every result is 84 (not needed).
//	@Tags			cluster
//	@Accept			json
//	@Produce		json
//	@Param			body	body		electionBody	false	"partitions to elect for (none: all)"
//	@Success		200		{object}	electionAnswer
//	@Failure		400		{object}	errorBody	"40001: the body is not the expected JSON"
//	@Failure		503		{object}	errorBody	"50301: no controller answered"
//	@Router			/admin/preferred-leader-election [post]
func (g *Gateway) preferredLeaderElection(w http.ResponseWriter, r *http.Request) {
	if g.cfg.Admin == nil {
		writeError(w, http.StatusServiceUnavailable, codeUnavailable, "leader elections are not available on this gateway")
		return
	}
	var body electionBody
	if _, ok := decodeRestBody(w, r, &body); !ok {
		return
	}
	var parts []controller.TopicPartition // nil: all
	for _, p := range body.Partitions {
		if p.Topic == "" || p.Partition < 0 {
			writeError(w, http.StatusBadRequest, codeMalformed, "each partition needs a topic and a partition >= 0")
			return
		}
		parts = append(parts, controller.TopicPartition{Topic: p.Topic, Partition: p.Partition})
	}
	outcomes, err := g.cfg.Admin.ElectLeaders(r.Context(), controller.PreferredElection, parts)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, codeUnavailable, "leader election: "+err.Error())
		return
	}
	results := []ElectionResult{}
	for _, tp := range server.SortedPartitions(outcomes) {
		res := ElectionResult{Topic: tp.Topic, Partition: tp.Partition, Elected: outcomes[tp] == nil}
		res.ErrorCode, res.Message = kafkaOutcome(outcomes[tp])
		results = append(results, res)
	}
	writeJSON(w, http.StatusOK, typeJSON, electionAnswer{Results: results})
}

// kafkaOutcome is a partition's outcome as Kafka's error code and the
// message saying why (0 and "" for none).
func kafkaOutcome(err error) (int16, string) {
	if err == nil {
		return 0, ""
	}
	return server.KafkaCode(err), err.Error()
}
