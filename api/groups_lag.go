package api

import (
	"net/http"
	"time"

	"github.com/ferry-mq/ferry/server/group"
)

// lagHistoryAnswer is GET /groups/{group}/lag/history's answer.
type lagHistoryAnswer struct {
	Group string `json:"group"`
	// IntervalMs is how often the coordinator samples lag.
	IntervalMs int64 `json:"interval_ms"`
	// Samples are the group's lag over time, oldest first (at most an
	// hour of them by default).
	Samples []group.LagSample `json:"samples"`
	// Current is the lag now, not yet in Samples.
	Current group.LagSample `json:"current"`
} //	@name	LagHistory

// groupLagHistory serves GET /groups/{group}/lag/history.
//
//	@Summary		A consumer group's lag over time
//	@Description	The group's coordinator samples every group's lag (the sum over its partitions, and per topic) on a timer and keeps a bounded ring of samples per group; this returns them with the lag now. The node keeps no longer history: Prometheus scraping ferry_consumer_group_lag does. When coordination of the group moves to another broker, its history starts anew there.
//	@Tags			groups
//	@Produce		json
//	@Param			group	path		string	true	"group id"
//	@Success		200		{object}	lagHistoryAnswer
//	@Failure		404		{object}	errorBody	"40404: no such group"
//	@Failure		503		{object}	errorBody	"50301: consumer groups are not enabled on this gateway"
//	@Router			/groups/{group}/lag/history [get]
func (g *Gateway) groupLagHistory(w http.ResponseWriter, r *http.Request) {
	name := pathParam(r, "group")
	lags, known := g.groups.Lag(name)
	samples, sampled := g.groups.LagHistory(name)
	if !known && !sampled {
		writeError(w, http.StatusNotFound, codeNotFound, "group "+name+" does not exist")
		return
	}
	ans := lagHistoryAnswer{Group: name, IntervalMs: g.groups.LagSampleInterval().Milliseconds(), Samples: samples,
		Current: group.LagSample{Time: time.Now().UnixMilli(), Topics: map[string]int64{}}}
	if ans.Samples == nil {
		ans.Samples = []group.LagSample{}
	}
	for _, l := range lags {
		if l.Lag >= 0 {
			ans.Current.Topics[l.Topic] += l.Lag
			ans.Current.Lag += l.Lag
		}
	}
	writeJSON(w, http.StatusOK, typeJSON, ans)
}
