package api

import (
	"context"
	"net/http"
	"time"

	"github.com/ferry-mq/ferry/replication/controller"
	"github.com/ferry-mq/ferry/server"
)

// Partition reassignment over HTTP: the same mechanism as Kafka's
// AlterPartitionReassignments and `ferry reassign`, run by the core's
// Admin (which asks the controller wherever it is, works out the plan and
// the throttle, and measures the progress). This file only encodes it.

// ReassignmentMove is one partition's target replicas (the format of
// kafka-reassign-partitions.sh's files).
type ReassignmentMove struct {
	Topic     string  `json:"topic" example:"orders"`
	Partition int32   `json:"partition" example:"0"`
	Replicas  []int32 `json:"replicas" example:"3,4"`
}

// ReassignmentPlan is a topic set's current and proposed assignment.
type ReassignmentPlan struct {
	Current  []ReassignmentMove `json:"current"`
	Proposed []ReassignmentMove `json:"proposed"`
}

// MovingPartition is a partition being reassigned.
type MovingPartition struct {
	Topic     string  `json:"topic" example:"orders"`
	Partition int32   `json:"partition" example:"0"`
	Replicas  []int32 `json:"replicas" example:"3,4,1,2"`
	Adding    []int32 `json:"adding_replicas" example:"3,4"`
	Removing  []int32 `json:"removing_replicas" example:"1,2"`
	// Progress is what the adding replicas hold of the leader's log;
	// absent when the sizes could not be read.
	Progress *MoveProgress `json:"progress,omitempty"`
}

// MoveProgress counts the bytes of a move: BytesToCopy is the leader's
// log size once per adding replica, BytesCopied what those replicas hold
// of it (each counted up to the leader's size).
type MoveProgress struct {
	BytesCopied int64 `json:"bytes_copied" example:"52428800"`
	BytesToCopy int64 `json:"bytes_to_copy" example:"104857600"`
}

// Reassignments are the moves in progress, their total progress and the
// replication throttle set for them (0: none).
type Reassignments struct {
	Reassignments []MovingPartition `json:"reassignments"`
	Total         MoveProgress      `json:"total"`
	// ThrottleBytesPerSec is the highest leader or follower replication
	// throttle set on a broker (0: unthrottled).
	ThrottleBytesPerSec int64 `json:"throttle_bytes_per_sec" example:"10485760"`
}

// PartitionResult is one partition's answer: ErrorCode 0 done, else
// Kafka's code with a message.
type PartitionResult struct {
	Topic     string `json:"topic" example:"orders"`
	Partition int32  `json:"partition" example:"0"`
	ErrorCode int16  `json:"error_code" example:"0"`
	Message   string `json:"message,omitempty"`
}

type reassignBody struct {
	// Partitions to move (the target replicas of each); or Topics and
	// Brokers to plan a move of whole topics.
	Partitions []ReassignmentMove `json:"partitions"`
	Topics     []string           `json:"topics" example:"orders"`
	Brokers    []int32            `json:"brokers" example:"3,4"`
	// Execute starts the planned move (with Topics and Brokers).
	Execute bool `json:"execute"`
	// ThrottleBytesPerSec, when positive, throttles the move's copying to
	// this rate on each broker taking part, before it starts.
	ThrottleBytesPerSec int64 `json:"throttle_bytes_per_sec" example:"10485760"`
}

type reassignAnswer struct {
	Plan    *ReassignmentPlan `json:"plan,omitempty"`
	Results []PartitionResult `json:"results,omitempty"`
}

// createReassignment serves POST /admin/reassignments.
//
//	@Summary		Plan or start a partition reassignment
//	@Description	With `topics` and `brokers`: proposes placing those topics' partitions on those brokers (Kafka's algorithm, rack-aware, the replication factor kept) and returns it with today's assignment; with `execute` true it also starts it. With `partitions`: starts moving each partition to its `replicas`. The new replicas copy the data and join the ISR before the old ones are dropped; GET shows the moves in progress. Each result's error_code is Kafka's (0 started, 39 invalid assignment, 3 unknown partition).
//	@Tags			cluster
//	@Accept			json
//	@Produce		json
//	@Param			body	body		reassignBody	true	"partitions to move, or topics and brokers to plan for"
//	@Success		200		{object}	reassignAnswer
//	@Failure		400		{object}	errorBody	"40001: neither partitions nor topics and brokers"
//	@Failure		503		{object}	errorBody	"50301: no controller answered"
//	@Router			/admin/reassignments [post]
func (g *Gateway) createReassignment(w http.ResponseWriter, r *http.Request) {
	if !g.requireAdmin(w) {
		return
	}
	var body reassignBody
	if present, ok := decodeRestBody(w, r, &body); !ok {
		return
	} else if !present {
		writeError(w, http.StatusBadRequest, codeMalformed, "a JSON body with partitions, or topics and brokers, is needed")
		return
	}
	var answer reassignAnswer
	moves := body.Partitions
	switch {
	case len(body.Partitions) > 0 && len(body.Topics) > 0:
		writeError(w, http.StatusBadRequest, codeMalformed, "give partitions, or topics and brokers, not both")
		return
	case len(body.Topics) > 0:
		if len(body.Brokers) == 0 {
			writeError(w, http.StatusBadRequest, codeMalformed, "planning a move of topics needs brokers")
			return
		}
		planned, err := g.cfg.Admin.PlanReassignment(body.Topics, body.Brokers)
		if err != nil {
			writeError(w, http.StatusUnprocessableEntity, codeInvalidReplication, err.Error())
			return
		}
		plan := ReassignmentPlan{Current: movesOf(planned.Current), Proposed: movesOf(planned.Proposed)}
		answer.Plan = &plan
		if !body.Execute {
			writeJSON(w, http.StatusOK, typeJSON, answer)
			return
		}
		moves = plan.Proposed
	case len(body.Partitions) == 0:
		writeError(w, http.StatusBadRequest, codeMalformed, "a JSON body with partitions, or topics and brokers, is needed")
		return
	}
	for _, m := range moves {
		if m.Topic == "" || m.Partition < 0 || len(m.Replicas) == 0 {
			writeError(w, http.StatusBadRequest, codeMalformed, "each partition needs a topic, a partition >= 0 and replicas")
			return
		}
	}
	if body.ThrottleBytesPerSec < 0 {
		writeError(w, http.StatusBadRequest, codeMalformed, "throttle_bytes_per_sec must be positive (or 0: no throttle)")
		return
	}
	if body.ThrottleBytesPerSec > 0 {
		if err := g.cfg.Admin.SetReassignmentThrottle(coreMoves(moves), body.ThrottleBytesPerSec); err != nil {
			writeError(w, http.StatusServiceUnavailable, codeUnavailable, "throttle: "+err.Error())
			return
		}
	}
	results, err := g.alterReassignments(r, moves)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, codeUnavailable, "reassignment: "+err.Error())
		return
	}
	answer.Results = results
	writeJSON(w, http.StatusOK, typeJSON, answer)
}

// listReassignments serves GET /admin/reassignments.
//
//	@Summary		Partition reassignments in progress
//	@Description	Each partition being moved, with its replica set during the move, the replicas being added and removed (Kafka's ListPartitionReassignments) and its progress (bytes the adding replicas hold of the leader's log, from DescribeLogDirs on every broker), the total progress, and the replication throttle in force. A partition leaves the list once its new replicas are in sync and the old ones are deleted.
//	@Tags			cluster
//	@Produce		json
//	@Success		200	{object}	Reassignments
//	@Failure		503	{object}	errorBody	"50301: no controller answered"
//	@Router			/admin/reassignments [get]
func (g *Gateway) listReassignments(w http.ResponseWriter, r *http.Request) {
	if !g.requireAdmin(w) {
		return
	}
	moving, err := g.cfg.Admin.Reassignments(r.Context())
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, codeUnavailable, "reassignments: "+err.Error())
		return
	}
	answer := Reassignments{Reassignments: []MovingPartition{}}
	// Progress and the throttle are best effort, and bounded: a broker
	// that does not answer (frozen, partitioned away) leaves the moves
	// without progress rather than holding the list.
	ctx, cancel := context.WithTimeout(r.Context(), progressTimeout)
	defer cancel()
	progress := g.cfg.Admin.ReassignmentProgress(ctx, moving)
	for _, tp := range server.SortedPartitions(moving) {
		as := moving[tp]
		mp := MovingPartition{Topic: tp.Topic, Partition: tp.Partition, Replicas: as.Replicas, Adding: as.Adding, Removing: as.Removing}
		if got, ok := progress[tp]; ok {
			mp.Progress = &MoveProgress{BytesCopied: got.BytesCopied, BytesToCopy: got.BytesToCopy}
			answer.Total.BytesCopied += got.BytesCopied
			answer.Total.BytesToCopy += got.BytesToCopy
		}
		answer.Reassignments = append(answer.Reassignments, mp)
	}
	answer.ThrottleBytesPerSec, _ = g.cfg.Admin.ReplicationThrottleRate()
	writeJSON(w, http.StatusOK, typeJSON, answer)
}

// removeReplicationThrottle serves DELETE /admin/reassignments/throttle.
//
//	@Summary		Remove the replication throttle
//	@Description	Removes the leader and follower replication throttle rates from every broker and the throttled-replica lists from every topic, as `ferry reassign --verify` does once a throttled move is complete.
//	@Tags			cluster
//	@Success		204
//	@Failure		503	{object}	errorBody	"50301: no controller answered"
//	@Router			/admin/reassignments/throttle [delete]
func (g *Gateway) removeReplicationThrottle(w http.ResponseWriter, r *http.Request) {
	if !g.requireAdmin(w) {
		return
	}
	if _, err := g.cfg.Admin.ClearReplicationThrottle(); err != nil {
		writeError(w, http.StatusServiceUnavailable, codeUnavailable, "throttle: "+err.Error())
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// cancelReassignments serves DELETE /admin/reassignments.
//
//	@Summary		Cancel partition reassignments
//	@Description	Returns the named partitions (body `{"partitions":[{"topic":…,"partition":…}]}`), or every partition being moved without a body, to their original replicas; replicas the move added are deleted. A partition that is not moving answers error_code 85.
//	@Tags			cluster
//	@Accept			json
//	@Produce		json
//	@Param			body	body		electionBody	false	"partitions to cancel (none: all in progress)"
//	@Success		200		{object}	reassignAnswer
//	@Failure		503		{object}	errorBody	"50301: no controller answered"
//	@Router			/admin/reassignments [delete]
func (g *Gateway) cancelReassignments(w http.ResponseWriter, r *http.Request) {
	if !g.requireAdmin(w) {
		return
	}
	var body electionBody
	if _, ok := decodeRestBody(w, r, &body); !ok {
		return
	}
	var moves []ReassignmentMove
	for _, p := range body.Partitions {
		moves = append(moves, ReassignmentMove{Topic: p.Topic, Partition: p.Partition})
	}
	if len(moves) == 0 {
		moving, err := g.cfg.Admin.Reassignments(r.Context())
		if err != nil {
			writeError(w, http.StatusServiceUnavailable, codeUnavailable, "reassignments: "+err.Error())
			return
		}
		for _, tp := range server.SortedPartitions(moving) {
			moves = append(moves, ReassignmentMove{Topic: tp.Topic, Partition: tp.Partition})
		}
	}
	answer := reassignAnswer{Results: []PartitionResult{}}
	if len(moves) > 0 {
		results, err := g.alterReassignments(r, moves)
		if err != nil {
			writeError(w, http.StatusServiceUnavailable, codeUnavailable, "cancel: "+err.Error())
			return
		}
		answer.Results = results
	}
	writeJSON(w, http.StatusOK, typeJSON, answer)
}

// progressTimeout bounds the replica sizes and throttle a listing of
// moves asks of the brokers.
const progressTimeout = 3 * time.Second

// alterReassignments starts moves (a nil Replicas cancels that
// partition's) and encodes each partition's answer, in order.
func (g *Gateway) alterReassignments(r *http.Request, moves []ReassignmentMove) ([]PartitionResult, error) {
	targets := map[controller.TopicPartition][]int32{}
	for _, m := range moves {
		targets[controller.TopicPartition{Topic: m.Topic, Partition: m.Partition}] = m.Replicas
	}
	outcomes, err := g.cfg.Admin.AlterReassignments(r.Context(), targets)
	if err != nil {
		return nil, err
	}
	var out []PartitionResult
	for _, tp := range server.SortedPartitions(outcomes) {
		pr := PartitionResult{Topic: tp.Topic, Partition: tp.Partition}
		pr.ErrorCode, pr.Message = kafkaOutcome(outcomes[tp])
		out = append(out, pr)
	}
	return out, nil
}

func movesOf(ms []server.PartitionMove) []ReassignmentMove {
	out := make([]ReassignmentMove, 0, len(ms))
	for _, m := range ms {
		out = append(out, ReassignmentMove{Topic: m.Topic, Partition: m.Partition, Replicas: m.Replicas})
	}
	return out
}

func coreMoves(ms []ReassignmentMove) []server.PartitionMove {
	out := make([]server.PartitionMove, 0, len(ms))
	for _, m := range ms {
		out = append(out, server.PartitionMove{Topic: m.Topic, Partition: m.Partition, Replicas: m.Replicas})
	}
	return out
}

func (g *Gateway) requireAdmin(w http.ResponseWriter) bool {
	if g.cfg.Admin == nil {
		writeError(w, http.StatusServiceUnavailable, codeUnavailable, "reassignments are not available on this gateway")
		return false
	}
	return true
}
