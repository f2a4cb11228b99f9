package api

import (
	"context"
	"net/http"
)

// Preferred leader election over HTTP: the same election as Kafka's
// ElectLeaders (ferry leader-election, kafka-leader-election.sh), asked of
// the controller wherever it is.

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

// ElectPreferredFunc runs preferred elections for partitions (nil: all).
type ElectPreferredFunc func(ctx context.Context, partitions []ElectionPartition) ([]ElectionResult, error)

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
	if g.cfg.ElectPreferred == nil {
		writeError(w, http.StatusServiceUnavailable, codeUnavailable, "leader elections are not available on this gateway")
		return
	}
	var body electionBody
	if _, ok := decodeRestBody(w, r, &body); !ok {
		return
	}
	for _, p := range body.Partitions {
		if p.Topic == "" || p.Partition < 0 {
			writeError(w, http.StatusBadRequest, codeMalformed, "each partition needs a topic and a partition >= 0")
			return
		}
	}
	results, err := g.cfg.ElectPreferred(r.Context(), body.Partitions)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, codeUnavailable, "leader election: "+err.Error())
		return
	}
	if results == nil {
		results = []ElectionResult{}
	}
	writeJSON(w, http.StatusOK, typeJSON, electionAnswer{Results: results})
}
