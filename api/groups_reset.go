package api

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
)

// POST /groups/{group}/offsets/reset: what `kafka-consumer-groups.sh
// --reset-offsets` does, over HTTP. Only an Empty group (no members, no
// rebalance) may be reset, as in Kafka; the reset is an admin offset
// commit (generation -1) through the coordinator, whose commit gate
// checks emptiness under the group's lock, so a consumer joining at the
// same moment either sees the new offsets or makes the reset fail with 409.

const codeGroupNotEmpty = 40906

type resetOffsetsBody struct {
	// Topic whose partitions are reset.
	Topic string `json:"topic"`
	// Partitions to reset; empty means every partition of the topic.
	Partitions []int32 `json:"partitions,omitempty"`
	// To is earliest, latest, timestamp or offset.
	To string `json:"to"`
	// Timestamp in ms since the epoch, for to=timestamp: each partition goes
	// to its first record at or after it (the end when there is none).
	Timestamp *int64 `json:"timestamp,omitempty"`
	// Offset for to=offset, clamped to [log start, high watermark].
	Offset *int64 `json:"offset,omitempty"`
	// DryRun computes the new offsets without committing them.
	DryRun bool `json:"dry_run,omitempty"`
}

type resetPartition struct {
	Partition int32 `json:"partition"`
	// Previous is the committed offset before the reset, -1 for none.
	Previous int64 `json:"previous_offset"`
	Offset   int64 `json:"offset"`
}

type resetOffsetsAnswer struct {
	Group   string           `json:"group"`
	Topic   string           `json:"topic"`
	DryRun  bool             `json:"dry_run"`
	Offsets []resetPartition `json:"offsets"`
}

// resetGroupOffsets serves POST /groups/{group}/offsets/reset.
//
//	@Summary		Reset an empty group's committed offsets (earliest, latest, a time or an offset)
//	@Description	Like kafka-consumer-groups --reset-offsets: every partition of the topic (or those listed) gets a new committed offset. The group must be Empty; dry_run computes without committing.
//	@Tags			groups
//	@Accept			json
//	@Produce		json
//	@Param			group	path		string				true	"group id"
//	@Param			body	body		resetOffsetsBody	true	"what to reset and where to"
//	@Success		200		{object}	resetOffsetsAnswer
//	@Failure		400		{object}	errorBody	"40001: malformed body; 40002: bad to, timestamp, offset or partition"
//	@Failure		404		{object}	errorBody	"40405 no such group; 40401 no such topic; 40402 no such partition"
//	@Failure		409		{object}	errorBody	"40906: the group has members or is rebalancing"
//	@Failure		413		{object}	errorBody	"41301: the body is over the request limit"
//	@Failure		415		{object}	errorBody	"41501: the content type is not JSON"
//	@Failure		500		{object}	errorBody	"50001: the commit failed"
//	@Failure		503		{object}	errorBody	"50301/50302: the coordinator is unavailable or not enabled"
//	@Router			/groups/{group}/offsets/reset [post]
func (g *Gateway) resetGroupOffsets(w http.ResponseWriter, r *http.Request) {
	name := pathParam(r, "group")
	var body resetOffsetsBody
	if !decodeBody(w, r, &body) {
		return
	}
	d, ok := g.groups.Describe(name)
	if !ok {
		writeError(w, http.StatusNotFound, codeGroupNotFound, "group "+name+" does not exist")
		return
	}
	if d.State != "Empty" {
		writeError(w, http.StatusConflict, codeGroupNotEmpty, fmt.Sprintf(
			"group %s is %s with %d member(s); offsets can be reset only while it is Empty: stop its consumers first", name, d.State, len(d.Members)))
		return
	}
	parts, err := g.resetTargets(name, body)
	if err != nil {
		writeResetError(w, err)
		return
	}
	ans := resetOffsetsAnswer{Group: name, Topic: body.Topic, DryRun: body.DryRun, Offsets: parts}
	if !body.DryRun {
		if status, code, msg := g.commitReset(r, name, body.Topic, parts); status != 0 {
			writeError(w, status, code, msg)
			return
		}
	}
	writeJSON(w, http.StatusOK, typeJSON, ans)
}

// errBadReset marks a request whose parameters are wrong (400).
type errBadReset struct{ msg string }

func (e errBadReset) Error() string { return e.msg }

func writeResetError(w http.ResponseWriter, err error) {
	if bad, ok := err.(errBadReset); ok {
		writeError(w, http.StatusBadRequest, codeBadParam, bad.msg)
		return
	}
	writeCoreError(w, err)
}

// resetTargets computes the new offset of each partition.
func (g *Gateway) resetTargets(group string, body resetOffsetsBody) ([]resetPartition, error) {
	if body.Topic == "" {
		return nil, errBadReset{`"topic" is required`}
	}
	count, err := g.broker.PartitionCount(body.Topic)
	if err != nil {
		return nil, err
	}
	partitions := body.Partitions
	if len(partitions) == 0 {
		for p := int32(0); p < count; p++ {
			partitions = append(partitions, p)
		}
	}
	previous := map[int32]int64{}
	if lag, ok := g.groups.Lag(group); ok {
		for _, l := range lag {
			if l.Topic == body.Topic {
				previous[l.Partition] = l.Committed
			}
		}
	}
	out := make([]resetPartition, 0, len(partitions))
	for _, p := range partitions {
		if p < 0 || p >= count {
			return nil, fmt.Errorf("%w: %s has partitions 0 to %d, not %d", server.ErrUnknownPartition, body.Topic, count-1, p)
		}
		offset, err := g.resetOffset(body, p)
		if err != nil {
			return nil, err
		}
		prev, ok := previous[p]
		if !ok {
			prev = -1
		}
		out = append(out, resetPartition{Partition: p, Previous: prev, Offset: offset})
	}
	return out, nil
}

func (g *Gateway) resetOffset(body resetOffsetsBody, p int32) (int64, error) {
	switch strings.ToLower(body.To) {
	case "earliest":
		o, _, err := g.broker.ListOffset(body.Topic, p, server.OffsetEarliest)
		return o, err
	case "latest":
		o, _, err := g.broker.ListOffset(body.Topic, p, server.OffsetLatest)
		return o, err
	case "timestamp":
		if body.Timestamp == nil || *body.Timestamp < 0 {
			return 0, errBadReset{`to=timestamp needs "timestamp", milliseconds since the epoch`}
		}
		o, _, err := g.broker.ListOffset(body.Topic, p, *body.Timestamp)
		if err == nil && o < 0 { // nothing that recent: the end, as Kafka's tool does
			o, _, err = g.broker.ListOffset(body.Topic, p, server.OffsetLatest)
		}
		return o, err
	case "offset":
		if body.Offset == nil {
			return 0, errBadReset{`to=offset needs "offset"`}
		}
		start, _, err := g.broker.ListOffset(body.Topic, p, server.OffsetEarliest)
		if err != nil {
			return 0, err
		}
		end, _, err := g.broker.ListOffset(body.Topic, p, server.OffsetLatest)
		return min(max(*body.Offset, start), end), err
	}
	return 0, errBadReset{fmt.Sprintf(`to %q: want earliest, latest, timestamp or offset`, body.To)}
}

// commitReset commits the offsets as an admin (no member, generation -1);
// it returns a non-zero status with the error to answer when it fails.
func (g *Gateway) commitReset(r *http.Request, group, topic string, parts []resetPartition) (int, int, string) {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 8
	req.Group = group
	req.Generation = -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	for _, p := range parts {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = p.Partition, p.Offset, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp := g.groups.HandleOffsetCommit(r.Context(), req)
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode == 0 {
				continue
			}
			kerrText := kerr.ErrorForCode(p.ErrorCode).Error()
			switch p.ErrorCode {
			case kerr.UnknownMemberID.Code, kerr.IllegalGeneration.Code, kerr.RebalanceInProgress.Code, kerr.FencedInstanceID.Code:
				return http.StatusConflict, codeGroupNotEmpty, fmt.Sprintf(
					"group %s gained members while resetting (%s); nothing was committed for partition %d: stop its consumers and retry", group, kerrText, p.Partition)
			case kerr.CoordinatorNotAvailable.Code:
				return http.StatusServiceUnavailable, codeUnavailable, "the group coordinator is not available: " + kerrText
			}
			return http.StatusInternalServerError, codeInternal, fmt.Sprintf("commit of partition %d failed: %s", p.Partition, kerrText)
		}
	}
	return 0, 0, ""
}
