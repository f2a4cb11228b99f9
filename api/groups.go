package api

import (
	"github.com/ferry-mq/ferry/server/auth"

	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/ferry-mq/ferry/server/group"
)

// GET /groups and GET /groups/{group}: the groups of the cluster (each
// coordinator lists its own; the node asked gathers them), Kafka clients
// and HTTP consumers alike; a group is described by its coordinator.

type groupDetail struct {
	group.GroupDescription
	Offsets []group.PartitionLag `json:"offsets"`
	// TotalLag sums the lag of partitions with a commit.
	TotalLag int64 `json:"total_lag"`
}

// groupsAnswer is GET /groups's answer.
type groupsAnswer struct {
	Groups []group.GroupSummary `json:"groups"`
	// UnreachableBrokers are brokers of the cluster whose groups are
	// missing from the list: their gateways did not answer.
	UnreachableBrokers []int32 `json:"unreachable_brokers,omitempty"`
}

// listGroups serves GET /groups.
//
//	@Summary		List the consumer groups
//	@Description	Every group of the cluster: each broker lists those it coordinates, and the node asked gathers them from the others (unreachable_brokers names those that did not answer).
//	@Tags			groups
//	@Produce	json
//	@Success	200	{object}	groupsAnswer
//	@Failure	503	{object}	errorBody	"50302: consumer groups are not enabled on this gateway"
//	@Router		/groups [get]
func (g *Gateway) listGroups(w http.ResponseWriter, r *http.Request) {
	answer := groupsAnswer{Groups: g.groups.List()}
	if r.Header.Get(forwardedHeader) == "" {
		for _, peer := range g.askPeers(r, "/groups") {
			var theirs groupsAnswer
			if peer.err != nil || json.Unmarshal(peer.body, &theirs) != nil {
				answer.UnreachableBrokers = append(answer.UnreachableBrokers, peer.broker)
				continue
			}
			answer.Groups = append(answer.Groups, theirs.Groups...)
		}
	}
	slices.SortFunc(answer.Groups, func(a, b group.GroupSummary) int { return strings.Compare(a.Group, b.Group) })
	// A group moving between coordinators may be listed by both.
	answer.Groups = slices.CompactFunc(answer.Groups, func(a, b group.GroupSummary) bool { return a.Group == b.Group })
	if g.cfg.Authorizer != nil {
		answer.Groups = slices.DeleteFunc(answer.Groups, func(s group.GroupSummary) bool {
			return !g.may(r, auth.OpDescribe, auth.Resource{Type: auth.ResourceGroup, Name: s.Group})
		})
	}
	if answer.Groups == nil {
		answer.Groups = []group.GroupSummary{}
	}
	writeJSON(w, http.StatusOK, typeJSON, answer)
}

// describeGroup serves GET /groups/{group}: members with client id, host
// and assignment; committed offset, high watermark and lag per partition.
//
//	@Summary	Describe a consumer group: members, assignments, committed offsets and lag
//	@Tags		groups
//	@Produce	json
//	@Param		group	path		string	true	"group id"
//	@Success	200		{object}	groupDetail
//	@Failure	404		{object}	errorBody	"40405: no such group"
//	@Failure	503		{object}	errorBody	"50302: consumer groups are not enabled on this gateway"
//	@Router		/groups/{group} [get]
func (g *Gateway) describeGroup(w http.ResponseWriter, r *http.Request) {
	name := pathParam(r, "group")
	d, ok := g.groups.Describe(name)
	if !ok {
		writeError(w, http.StatusNotFound, codeGroupNotFound, "group "+name+" does not exist")
		return
	}
	lag, _ := g.groups.Lag(name)
	detail := groupDetail{GroupDescription: d, Offsets: lag}
	for _, l := range lag {
		if l.Committed >= 0 && l.Lag > 0 {
			detail.TotalLag += l.Lag
		}
	}
	writeJSON(w, http.StatusOK, typeJSON, detail)
}

const codeGroupNotFound = 40405
