package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"

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

// listGroups serves GET /groups.
func (g *Gateway) listGroups(w http.ResponseWriter, r *http.Request) {
	groups := g.groups.List()
	if groups == nil {
		groups = []group.GroupSummary{}
	}
	writeJSON(w, http.StatusOK, typeJSON, map[string]any{"groups": groups})
}

// describeGroup serves GET /groups/{group}: members with client id, host
// and assignment; committed offset, high watermark and lag per partition.
func (g *Gateway) describeGroup(w http.ResponseWriter, r *http.Request) {
	name := chi.URLParam(r, "group")
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
