package api

import (
	"net/http"

	"github.com/ferry-mq/ferry/server/group"
)

// GET /groups and GET /groups/{group}: the groups this node coordinates,
// Kafka clients and HTTP consumers alike.

type groupDetail struct {
	group.GroupDescription
	Offsets []group.PartitionLag `json:"offsets"`
	// TotalLag sums the lag of partitions with a commit.
	TotalLag int64 `json:"total_lag"`
}

// groupsAnswer is GET /groups's answer.
type groupsAnswer struct {
	Groups []group.GroupSummary `json:"groups"`
}

// listGroups serves GET /groups.
//
//	@Summary	List the consumer groups this node coordinates
//	@Tags		groups
//	@Produce	json
//	@Success	200	{object}	groupsAnswer
//	@Failure	503	{object}	errorBody	"50302: consumer groups are not enabled on this gateway"
//	@Router		/groups [get]
func (g *Gateway) listGroups(w http.ResponseWriter, r *http.Request) {
	groups := g.groups.List()
	if groups == nil {
		groups = []group.GroupSummary{}
	}
	writeJSON(w, http.StatusOK, typeJSON, groupsAnswer{Groups: groups})
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
