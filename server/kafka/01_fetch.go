package kafka

// Fetch (key 1), versions 0–17.
//
// handleFetch serves topics by name with record batches; serveFetch
// (01_fetch_versions.go) adapts the other versions around it: v13+ name
// topics by id, v0–v3 answer in the old message formats, down-converted
// from the stored batches (01_fetch_legacy.go).
//
// Incremental fetch sessions (KIP-227, v7+; 01_fetch_session.go and the
// fetchsession package): a full fetch with SessionEpoch 0 opens a session
// when the cache has room (FetchSessionCacheSlots), epoch -1 fetches
// without one; an incremental fetch (epoch > 0) names only the partitions
// it adds or whose fetch offset moved and forgets others (ForgottenTopics),
// is served as a full fetch of every partition of its session — so its
// long poll wakes on any of them, and a follower's offset in each counts
// as if listed — and is answered with only the partitions that changed
// (records, an error, a new high watermark, last stable offset or log
// start offset). Session errors (FETCH_SESSION_ID_NOT_FOUND,
// INVALID_FETCH_SESSION_EPOCH, FETCH_SESSION_TOPIC_ID_ERROR) are the whole
// answer. Unlike Kafka, a session serves only its opener's principal.
// v4+ batches are sent as stored, never re-encoded.
// Only records below the high watermark are returned; with IsolationLevel
// 1 (read_committed, v4+) only those below the last stable offset, with
// the aborted transactions that overlap them (AbortedTransactions, null
// for read_uncommitted as in Kafka), which the client filters out, and
// such a fetch waits for the last stable offset to pass its offset (an
// open transaction's records below the high watermark do not end its
// wait, as Kafka's FetchTxnCommitted isolation); a
// follower always reads up to the log end. The fetch waits up to
// MaxWaitMillis across all requested partitions until MinBytes are
// available, as a delayed fetch in the broker's purgatory
// (replication/delayed): bytes are counted from the partitions' appends, not
// read, and the partitions are read once more when it completes, as Kafka's
// DelayedFetch does. Any partition error answers at once, as in Kafka.
// MaxBytes and PartitionMaxBytes are honoured with KIP-74: the first non-empty partition
// returns its first batch even when larger, later partitions return nothing
// rather than exceed the limit. Follower fetches (ReplicaID >= 0, or
// ReplicaState in v15+) must come from another assigned replica
// (NOT_LEADER_OR_FOLLOWER otherwise) and read up to the log end rather
// than the high watermark, waiting on the bytes below it, and no longer
// than server.FollowerTellWithin once the high watermark passes the last
// one the follower was told (Kafka's DelayedFetch case H, which answers
// at once): a follower serves reads up to it; the follower's
// offset in every partition of its request is counted (its progress: the
// high watermark, the ISR) before any partition is read, as Kafka counts
// each partition of a fetch whether or not the response's bytes reach it;
// LastFetchedEpoch (divergence) is not checked. On plaintext connections
// v4+ batches are not read: storage finds their byte ranges (Chunks) and
// the writer sends them from the segment files with sendfile
// (sendfile.go), but for a small read at the log's tail (a consumer that
// keeps up), which the core copies, as it does otherwise.
//
// The response is capped, as in Kafka's KafkaApis, at min(MaxBytes,
// fetch.max.bytes) (Config.FetchMaxBytes), and MinBytes at that cap. A
// partition listed more than once is fetched once: Kafka reads the
// request into a map keyed by topic-partition (FetchRequest.fetchData, a
// LinkedHashMap), so duplicates collapse into one entry answered once, in
// the position of its first occurrence, with the fields of its last.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/replication/delayed"
	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/auth"
	"github.com/ferry-mq/ferry/server/quota"
)

func (s *Server) handleFetch(ctx context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.FetchRequest)
	collapseDuplicatePartitions(req)
	if req.MaxBytes <= 0 || req.MaxBytes > s.cfg.FetchMaxBytes {
		req.MaxBytes = s.cfg.FetchMaxBytes
	}
	req.MinBytes = min(req.MinBytes, req.MaxBytes)
	resp, waits, done := s.fetchOnce(ctx, req)
	maxWait := time.Duration(max(req.MaxWaitMillis, 0)) * time.Millisecond
	if done || maxWait <= 0 {
		return resp
	}
	if len(waits) == 0 {
		// Only throttled partitions: wait for the rate, not for data
		// (nothing they append would be served), as Kafka's DelayedFetch
		// leaves them out of its byte count.
		maxWait = min(maxWait, resp.throttleDelay)
	}
	if resp.highWatermarkNews {
		maxWait = min(maxWait, server.FollowerTellWithin)
	}
	// Wait in the purgatory for MinBytes across the partitions: no reads
	// meanwhile; then read once more.
	parked := quota.Park(ctx)
	outcome := s.broker.WaitForData(ctx, int64(req.MinBytes), waits, maxWait)
	parked.End()
	switch outcome {
	case delayed.Cancelled, delayed.Closed:
		return resp // the connection went away, or the broker is closing
	}
	resp, _, _ = s.fetchOnce(ctx, req)
	return resp
}

// fetchAnswer is a Fetch response being built. With sendfile, its
// partitions' RecordBatches stay empty and chunks[k] says where the k-th
// partition's batches (in response order) lie on disk; chunks is nil when
// the batches are in RecordBatches.
type fetchAnswer struct {
	*kmsg.FetchResponse
	chunks [][]server.Chunk
	// throttleDelay: partitions were held back by the leader replication
	// throttle for this long.
	throttleDelay time.Duration
	// readCommitted: the consumer's isolation_level is read_committed.
	readCommitted bool
	// highWatermarkNews: a follower's partition has a high watermark it
	// was not told yet, so the answer waits for records no longer than
	// server.FollowerTellWithin (FetchResult.HighWatermarkNews).
	highWatermarkNews bool
}

// fetchOnce reads every requested partition once. done reports that the
// response should be sent now (MinBytes reached or an error); otherwise
// waits say what each partition had, taken before reading it.
func (s *Server) fetchOnce(ctx context.Context, req *kmsg.FetchRequest) (*fetchAnswer, []delayed.Wait, bool) {
	resp := &fetchAnswer{FetchResponse: req.ResponseKind().(*kmsg.FetchResponse),
		readCommitted: req.Version >= 4 && req.IsolationLevel == 1}
	chunksOnly := req.Version >= firstBatchFetchVersion && requestClientFrom(ctx).sendfile
	budget := int(req.MaxBytes) // capped by handleFetch
	waits := make([]delayed.Wait, 0, requestedPartitions(req))
	total, failed := 0, false
	replica := fetchingReplica(req)
	followerDenied := replica >= 0 && !s.authorizedCluster(ctx, auth.OpClusterAction)
	var counted []bool
	if replica >= 0 && !followerDenied {
		counted = s.countFollowerFetch(req, replica)
	}
	k := 0 // the partition's place in the request, for counted
	for _, t := range req.Topics {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = t.Topic
		if followerDenied || replica < 0 && !s.authorizedTopic(ctx, auth.OpRead, t.Topic) {
			k += len(t.Partitions)
			rt.Partitions = deniedFetchPartitions(t.Partitions)
			if chunksOnly {
				resp.chunks = append(resp.chunks, make([][]server.Chunk, len(t.Partitions))...)
			}
			failed = true
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		rt.Partitions = make([]kmsg.FetchResponseTopicPartition, 0, len(t.Partitions))
		for i := range t.Partitions {
			rp := kmsg.NewFetchResponseTopicPartition()
			isCounted := counted != nil && counted[k]
			k++
			n, wait, ok, chunks := s.fetchPartition(ctx, resp, t.Topic, &t.Partitions[i], &rp, replica, isCounted,
				budget-total, total == 0, chunksOnly)
			if chunksOnly {
				resp.chunks = append(resp.chunks, chunks)
			}
			if ok {
				waits = append(waits, wait)
			}
			failed = failed || rp.ErrorCode != 0
			total += n
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, waits, failed || total >= int(req.MinBytes) || len(waits) == 0 && resp.throttleDelay == 0
}

// countFollowerFetch counts a follower's offsets in every partition it
// asks for before reading any (server.CountFollowerFetch): with many
// partitions in the request, the one that moves the high watermark no
// longer waits for the partitions listed before it to be read, and the
// acks=all produces it completes answer first. counted[k] says the k-th
// requested partition was counted; one that was not (an error, a fenced
// or unknown leader epoch, a throttled follower held back) is handled by
// fetchPartition as before, which counts it or answers its error.
func (s *Server) countFollowerFetch(req *kmsg.FetchRequest, replica int32) []bool {
	counted := make([]bool, requestedPartitions(req))
	woken := s.broker.WokenMark()
	k := 0
	for _, t := range req.Topics {
		for i := range t.Partitions {
			counted[k] = s.countFollowerPartition(t.Topic, &t.Partitions[i], replica)
			k++
		}
	}
	s.broker.YieldToWoken(woken)
	return counted
}

// countFollowerPartition counts the partitions fetchPartition would
// count: known here, in the follower's leader epoch, not held back by the
// leader replication throttle.
func (s *Server) countFollowerPartition(topic string, fp *kmsg.FetchRequestTopicPartition, replica int32) bool {
	p, err := s.broker.Partition(topic, fp.Partition)
	if err != nil || checkLeaderEpoch(fp.CurrentLeaderEpoch, p.LeaderEpoch()) != 0 {
		return false
	}
	if _, delay := s.broker.LeaderThrottle(topic, p, replica); delay > 0 {
		return false
	}
	return s.broker.CountFollowerFetch(topic, fp.Partition, replica, fp.FetchOffset) == nil
}

// deniedFetchPartitions answers a topic the fetcher may not read (a
// consumer without READ on it, a follower without CLUSTER_ACTION on the
// cluster) with TOPIC_AUTHORIZATION_FAILED, as Kafka does.
func deniedFetchPartitions(ps []kmsg.FetchRequestTopicPartition) []kmsg.FetchResponseTopicPartition {
	out := make([]kmsg.FetchResponseTopicPartition, len(ps))
	for i := range ps {
		rp := &out[i]
		rp.Default()
		rp.Partition, rp.ErrorCode = ps[i].Partition, codeTopicAuthFailed
		rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
		rp.RecordBatches = []byte{}
	}
	return out
}

// fetchPartition fills rp and returns the bytes it added and what a wait
// on the partition counts from (ok false on an error: no wait); with
// chunksOnly the bytes are not read and chunks (always set) say where they lie.
func (s *Server) fetchPartition(ctx context.Context, resp *fetchAnswer, topic string, fp *kmsg.FetchRequestTopicPartition,
	rp *kmsg.FetchResponseTopicPartition, replica int32, counted bool, budget int, first, chunksOnly bool) (n int, wait delayed.Wait, ok bool, chunks []server.Chunk) {
	rp.Partition = fp.Partition
	rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
	rp.RecordBatches = []byte{} // never null: librdkafka rejects a null record set
	p, err := s.broker.Partition(topic, fp.Partition)
	if err != nil {
		rp.ErrorCode = errorCode(err)
		return 0, wait, false, nil
	}
	if code := checkLeaderEpoch(fp.CurrentLeaderEpoch, p.LeaderEpoch()); code != 0 {
		rp.ErrorCode = code
		return 0, wait, false, nil
	}
	follower := replica >= 0
	if follower {
		if err := server.CheckFollower(p, s.broker.BrokerID(), replica); err != nil {
			rp.ErrorCode = errorCode(err)
			return 0, wait, false, nil
		}
		wait = server.FollowerWaitPoint(p, fp.FetchOffset)
		throttled, delay := s.broker.LeaderThrottle(topic, p, replica)
		if delay > 0 {
			fillOffsets(rp, p)
			resp.throttleDelay = max(resp.throttleDelay, delay)
			return 0, wait, false, nil
		}
		if throttled {
			defer func() { s.broker.RecordLeaderThrottled(n) }()
		}
	} else {
		if err := p.CheckLeading(); err != nil {
			// Consumers read from the leader (Kafka before KIP-392), which
			// has not fenced itself.
			rp.ErrorCode = errorCode(err)
			return 0, wait, false, nil
		}
		wait = server.WaitPoint(p, fp.FetchOffset)
		wait.Committed = resp.readCommitted
	}
	limit := min(int(fp.PartitionMaxBytes), budget)
	if limit <= 0 && !first {
		fillOffsets(rp, p)
		return 0, wait, true, nil
	}
	res, err := s.broker.Fetch(ctx, server.FetchRequest{Topic: topic, Partition: fp.Partition,
		Offset: fp.FetchOffset, MaxBytes: max(limit, 1), ChunksOnly: chunksOnly, Follower: follower, ReplicaID: replica,
		Counted: counted, ReadCommitted: !follower && resp.readCommitted}, nil)
	rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = res.HighWatermark, res.LastStableOffset, res.LogStartOffset
	if follower {
		wait.ToldHighWatermark = res.HighWatermark
		resp.highWatermarkNews = resp.highWatermarkNews || res.HighWatermarkNews
	}
	if res.AbortedTxns != nil {
		rp.AbortedTransactions = make([]kmsg.FetchResponseTopicPartitionAbortedTransaction, len(res.AbortedTxns))
		for i, a := range res.AbortedTxns {
			rp.AbortedTransactions[i].Default()
			rp.AbortedTransactions[i].ProducerID, rp.AbortedTransactions[i].FirstOffset = a.ProducerID, a.FirstOffset
		}
	}
	if err != nil {
		rp.ErrorCode = errorCode(err)
		return 0, wait, false, nil
	}
	size := res.Size()
	wait.KnownBytes = int64(size)
	if !first && size > budget {
		return 0, wait, true, nil // KIP-74: only the first partition may exceed the limits
	}
	if len(res.Data) > 0 {
		rp.RecordBatches = res.Data
	}
	return size, wait, true, res.Chunks
}

// fetchingReplica is the broker id of a follower's fetch, or -1 for a
// consumer: ReplicaID before v15, ReplicaState.ID from v15 (KIP-903).
func fetchingReplica(req *kmsg.FetchRequest) int32 {
	if req.Version >= 15 {
		return req.ReplicaState.ID
	}
	return req.ReplicaID
}

func requestedPartitions(req *kmsg.FetchRequest) int {
	n := 0
	for _, t := range req.Topics {
		n += len(t.Partitions)
	}
	return n
}

// collapseDuplicatePartitions keeps one entry per topic-partition, as
// Kafka's map does: at its first position, with its last fields. A topic
// left without partitions is dropped.
func collapseDuplicatePartitions(req *kmsg.FetchRequest) {
	if requestedPartitions(req) < 2 {
		return // nothing can repeat: no map for the common one-partition fetch
	}
	type topicPartition struct {
		topic     string
		partition int32
	}
	seen := make(map[topicPartition]*kmsg.FetchRequestTopicPartition)
	dup := false
	for ti := range req.Topics {
		t := &req.Topics[ti]
		for pi := range t.Partitions {
			tp := topicPartition{t.Topic, t.Partitions[pi].Partition}
			if first, ok := seen[tp]; ok {
				*first, dup = t.Partitions[pi], true
				continue
			}
			seen[tp] = &t.Partitions[pi]
		}
	}
	if !dup {
		return
	}
	kept := make(map[*kmsg.FetchRequestTopicPartition]bool, len(seen))
	for _, p := range seen {
		kept[p] = true
	}
	topics := req.Topics[:0]
	for _, t := range req.Topics {
		parts := make([]kmsg.FetchRequestTopicPartition, 0, len(t.Partitions))
		for pi := range t.Partitions {
			if kept[&t.Partitions[pi]] {
				parts = append(parts, t.Partitions[pi])
			}
		}
		if len(parts) > 0 {
			t.Partitions = parts
			topics = append(topics, t)
		}
	}
	req.Topics = topics
}

func fillOffsets(rp *kmsg.FetchResponseTopicPartition, p server.Partition) {
	rp.HighWatermark = p.HighWatermark()
	rp.LastStableOffset = p.LastStableOffset()
	rp.LogStartOffset = p.LogStartOffset()
}
