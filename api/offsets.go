package api

import (
	"net/http"
	"strconv"

	"github.com/ferry-mq/ferry/server"
)

// GET /kafka/{topic}/partitions/{partition}/offsets?timestamp=<ms|earliest|latest>:
// Kafka's ListOffsets over HTTP. It answers {"offset","timestamp"}: the log
// start offset for earliest, the high watermark for latest (timestamp -1),
// else the first record whose timestamp is at least ms with that record's
// timestamp, or offset -1 and timestamp -1 when no record is that recent
// (Kafka's answer). The admin page uses it to browse from a point in time.

type offsetAnswer struct {
	Offset    int64 `json:"offset"`
	Timestamp int64 `json:"timestamp"`
}

// listOffset serves GET /kafka/{topic}/partitions/{partition}/offsets.
//
//	@Summary		Find an offset by time (Kafka's ListOffsets)
//	@Description	earliest: the log start offset; latest (the default): the high watermark, timestamp -1; a time in ms: the first record at or after it and its timestamp, or offset -1 and timestamp -1 when no record is that recent.
//	@Tags			gateway
//	@Produce		json
//	@Param			topic		path		string	true	"topic name"
//	@Param			partition	path		integer	true	"partition number"
//	@Param			timestamp	query		string	false	"milliseconds since the epoch, earliest or latest (default)"
//	@Success		200			{object}	offsetAnswer
//	@Failure		400			{object}	errorBody	"40002: partition or timestamp is not valid"
//	@Failure		404			{object}	errorBody	"40401 no such topic, 40402 no such partition"
//	@Failure		500			{object}	errorBody	"50001/50002: internal or storage error"
//	@Router			/kafka/{topic}/partitions/{partition}/offsets [get]
func (g *Gateway) listOffset(w http.ResponseWriter, r *http.Request) {
	partition, err := strconv.ParseInt(pathParam(r, "partition"), 10, 32)
	if err != nil {
		writeError(w, http.StatusBadRequest, codeBadParam, "partition must be an integer")
		return
	}
	ts, ok := parseOffsetTimestamp(r.URL.Query().Get("timestamp"))
	if !ok {
		writeError(w, http.StatusBadRequest, codeBadParam,
			"timestamp must be milliseconds since the epoch (>= 0), earliest or latest")
		return
	}
	offset, at, err := g.broker.ConsumerListOffset(r.Context(), pathParam(r, "topic"), int32(partition), ts)
	if err != nil {
		writeCoreError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, typeJSON, offsetAnswer{Offset: offset, Timestamp: at})
}

// parseOffsetTimestamp maps the query value to ListOffset's argument; an
// empty value means latest, as Kafka's consumers default to.
func parseOffsetTimestamp(v string) (int64, bool) {
	switch v {
	case "", "latest", "end":
		return server.OffsetLatest, true
	case "earliest", "beginning":
		return server.OffsetEarliest, true
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms < 0 {
		return 0, false
	}
	return ms, true
}
