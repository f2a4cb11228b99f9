package api

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// Readiness with failed partitions. A partition whose log failed on a
// write or fsync error (disk full, EIO) refuses produce until it recovers;
// the node keeps serving every other partition, and reads of the failed
// one. Kafka in that state takes the log directory offline and keeps the
// broker up while any log directory works, so /readyz does the same: some
// partitions offline is status "degraded" with 200 (a load balancer keeps
// the node: taking it out would make every healthy partition unreachable
// over HTTP too), listed in offline_partitions and in checks.storage; every
// partition offline is "not ready" with 503 (the node cannot take a single
// write, as Kafka shuts a broker down when its last log directory fails).

// maxNamedOffline bounds how many offline partitions checks.storage names;
// offline_partitions lists them all.
const maxNamedOffline = 10

// checkPartitions degrades body when partitions are offline. Expects the
// other checks done.
func (g *Gateway) checkPartitions(body *readyBody) {
	h := g.broker.PartitionHealth()
	if len(h.Offline) == 0 {
		return
	}
	body.OfflinePartitions = h.Offline
	names := make([]string, 0, min(len(h.Offline), maxNamedOffline))
	for _, p := range h.Offline[:cap(names)] {
		names = append(names, p.Topic+"-"+strconv.Itoa(int(p.Partition)))
	}
	if len(h.Offline) > len(names) {
		names = append(names, "…")
	}
	state := "degraded"
	if len(h.Offline) == h.Partitions {
		state = "not ready"
	}
	body.Checks["storage"] = fmt.Sprintf("%s: %d of %d partitions offline after a write or fsync error (%s)",
		state, len(h.Offline), h.Partitions, strings.Join(names, ", "))
	if body.Status == "ready" || state == "not ready" {
		body.Status = state
	}
}

// recoverAnswer is POST /admin/partitions/{topic}/{partition}/recover's answer.
type recoverAnswer struct {
	Topic     string `json:"topic" example:"orders"`
	Partition int32  `json:"partition" example:"0"`
	// Recovered is true when the partition was offline and now takes
	// writes, false when it was not offline (nothing done).
	Recovered    bool  `json:"recovered"`
	LogEndOffset int64 `json:"log_end_offset" example:"42"`
}

// recoverPartition serves POST /admin/partitions/{topic}/{partition}/recover.
//
//	@Summary		Bring an offline partition back without a restart
//	@Description	A partition whose log failed on a write or fsync error (disk full, EIO) refuses produce; the node retries it by itself every log.failure.probe.interval.ms. This call retries now: it checks the partition directory takes writes, runs crash recovery on the log (a torn tail is dropped; every acknowledged record stays, once) and takes writes again. On a partition that is not offline it does nothing (recovered false).
//	@Tags			topics
//	@Produce		json
//	@Param			topic		path		string	true	"topic name"
//	@Param			partition	path		int		true	"partition"
//	@Success		200			{object}	recoverAnswer
//	@Failure		400			{object}	errorBody	"40002: partition is not an integer"
//	@Failure		404			{object}	errorBody	"40401/40402: no such topic or partition"
//	@Failure		500			{object}	errorBody	"50002: the directory still refuses writes; the partition stays offline"
//	@Failure		503			{object}	errorBody	"50301: the node is shutting down"
//	@Router			/admin/partitions/{topic}/{partition}/recover [post]
func (g *Gateway) recoverPartition(w http.ResponseWriter, r *http.Request) {
	partition, err := strconv.ParseInt(pathParam(r, "partition"), 10, 32)
	if err != nil {
		writeError(w, http.StatusBadRequest, codeBadParam, "partition must be an integer")
		return
	}
	topic := pathParam(r, "topic")
	recovered, err := g.broker.RecoverPartition(topic, int32(partition))
	if err != nil {
		writeCoreError(w, err)
		return
	}
	p, err := g.broker.Partition(topic, int32(partition))
	if err != nil {
		writeCoreError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, typeJSON, recoverAnswer{Topic: topic, Partition: int32(partition),
		Recovered: recovered, LogEndOffset: p.LogEndOffset()})
}
