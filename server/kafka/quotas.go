package kafka

// Client quotas (KIP-13, KIP-55, KIP-124, KIP-219): a Produce's or a
// Fetch's bytes count against its entity's byte rate, and every request's
// handler time against its entity's request_percentage (server/quota). A
// request that puts the entity over earns a throttle time, the larger of
// the two when both do. The response goes out at once with
// throttle_time_ms, and the connection's next request is not read until
// the time has passed ("muting" the channel, as Kafka 2.0+ does), so a
// client that ignores the field is held too. A Fetch by an entity still
// owing time is answered empty, as Kafka does; a Fetch's max_bytes is
// bounded by one second of its quota. The user is the connection's
// principal name (ANONYMOUS without authentication), the client id the
// request header's.
//
// Handler time runs from decoding the request to its response being
// ready, on the connection's reader, less the time parked in a purgatory
// (a Fetch's long poll, a Produce waiting for acks=all, JoinGroup and
// SyncGroup waiting for the rebalance; quota.Park), as Kafka counts a
// request handler thread's time and not purgatory time. Exempt, as in
// Kafka: the cluster actions (the controller's LeaderAndIsr, StopReplica,
// UpdateMetadata and ControlledShutdown, and a follower's Fetch, which the
// replication throttle covers instead), which Kafka's ApiKeys marks
// clusterAction and answers without a request throttle; and SASL
// (SaslHandshake, SaslAuthenticate, a v0 bare token) and ApiVersions,
// which Kafka serves in its authenticator before any quota applies.
// Unlike Kafka, ferry exempts ApiVersions and the SASL APIs after
// authentication as well: they are the client's first words on every
// connection, and Kafka's post-authentication answer to SASL is an error.
// It also exempts a follower's OffsetForLeaderEpoch (replica_id >= 0),
// which Kafka throttles: it shares the replica fetcher's connection, and
// a mute there would hold the follower's Fetches too.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/auth"
	"github.com/ferry-mq/ferry/server/quota"
)

// serveProduceWithQuota is Produce held to producer_byte_rate.
func (s *Server) serveProduceWithQuota(ctx context.Context, kreq kmsg.Request) kmsg.Response {
	resp := s.handleProduce(ctx, kreq)
	req := kreq.(*kmsg.ProduceRequest)
	n := 0
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			n += len(p.Records)
		}
	}
	ms := s.throttleClient(ctx, quota.ProducerByteRate, "produce", n)
	if pr, ok := resp.(*kmsg.ProduceResponse); ok && ms > 0 && resp != closeConnection {
		pr.ThrottleMillis = ms
	}
	return resp
}

// serveFetchWithQuota is Fetch held to consumer_byte_rate.
func (s *Server) serveFetchWithQuota(ctx context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.FetchRequest)
	if fetchingReplica(req) >= 0 {
		return s.serveFetch(ctx, kreq) // replication has its own throttle
	}
	user, client := quotaNames(ctx)
	if owed := s.cfg.Quotas.Pending(quota.ConsumerByteRate, user, client, time.Now()); owed.Delay > 0 {
		ms := s.muteFor(ctx, "fetch", user, client, owed)
		return s.throttledFetch(ctx, req, ms)
	}
	if limit, ok := s.cfg.Quotas.WindowBytes(quota.ConsumerByteRate, user, client); ok && (req.MaxBytes <= 0 || int64(req.MaxBytes) > limit) {
		req.MaxBytes = int32(min(max(limit, 1), int64(s.cfg.FetchMaxBytes)))
	}
	resp := s.serveFetch(ctx, kreq)
	var fr *kmsg.FetchResponse
	n := 0
	switch r := resp.(type) {
	case *sendfileFetch:
		fr = r.FetchResponse
		for _, secs := range r.parts {
			for _, sec := range secs {
				n += sec.chunk.Size()
			}
		}
	case *kmsg.FetchResponse:
		fr = r
	default:
		return resp
	}
	for _, t := range fr.Topics {
		for _, p := range t.Partitions {
			n += len(p.RecordBatches)
		}
	}
	if ms := s.throttleClient(ctx, quota.ConsumerByteRate, "fetch", n); ms > 0 {
		fr.ThrottleMillis = ms
	}
	return resp
}

func quotaNames(ctx context.Context) (user, client string) {
	return auth.PrincipalFrom(ctx).Name, requestClientFrom(ctx).id
}

// throttleClient records n bytes of key for the request's entity and
// mutes its connection for the throttle time earned, in milliseconds.
func (s *Server) throttleClient(ctx context.Context, key, kind string, n int) int32 {
	user, client := quotaNames(ctx)
	th := s.cfg.Quotas.Record(key, user, client, n, time.Now())
	if th.Delay <= 0 {
		return 0
	}
	return s.muteFor(ctx, kind, user, client, th)
}

// muteFor holds the connection's next read for th's delay and counts it.
func (s *Server) muteFor(ctx context.Context, kind, user, client string, th quota.Throttle) int32 {
	return s.mute(requestClientFrom(ctx).conn, kind, user, client, th)
}

// mute holds c's next read for th's delay, or longer if another quota
// already holds it longer, and counts it; c nil: a handler called without
// a connection (tests).
func (s *Server) mute(c *conn, kind, user, client string, th quota.Throttle) int32 {
	if c != nil {
		if until := time.Now().Add(th.Delay); until.After(c.mutedUntil) {
			c.mutedUntil = until
		}
	}
	mUser, mClient := "", ""
	if th.Entity.User.Set {
		mUser = user
	}
	if th.Entity.Client.Set {
		mClient = client
	}
	s.cfg.Metrics.ClientThrottled(kind, mUser, mClient, th.Delay)
	return int32(th.Delay.Milliseconds())
}

// waitMuted holds the reader until a throttle time has passed; false:
// the server is shutting down.
func (c *conn) waitMuted() bool {
	d := time.Until(c.mutedUntil)
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.s.ctx.Done():
		return false
	}
}

// throttleRequest counts a served request's handler time against its
// entity's request_percentage and, when that puts the entity over, mutes
// the connection and raises the response's throttle time to what it
// earned. resp is nil for a request without a response (acks=0 Produce):
// its time counts, and the mute still holds the next request.
func (s *Server) throttleRequest(c *conn, h requestHeader, req kmsg.Request, resp kmsg.Response, handled time.Duration) {
	if requestQuotaExempt(h.key, req) {
		return
	}
	user := c.principal.Name
	th := s.cfg.Quotas.RecordRequest(user, h.clientID, handled, time.Now())
	if th.Delay <= 0 {
		return
	}
	ms := s.mute(c, "request", user, h.clientID, th)
	tr, settable := resp.(kmsg.SetThrottleResponse)
	cur, readable := resp.(kmsg.ThrottleResponse)
	if settable && readable {
		if was, _ := cur.Throttle(); ms > was {
			tr.SetThrottle(ms)
		}
	}
}

// requestQuotaExempt reports whether request_percentage leaves a request
// alone: a cluster action (the controller's orders, a follower's Fetch),
// a follower's OffsetForLeaderEpoch, SASL or ApiVersions (see the file's
// header).
func requestQuotaExempt(key int16, req kmsg.Request) bool {
	switch key {
	case apiVersionsKey, saslHandshakeKey, saslAuthenticateKey:
		return true
	case fetchKey:
		return fetchingReplica(req.(*kmsg.FetchRequest)) >= 0
	case offsetForLeaderEpochKey:
		r := req.(*kmsg.OffsetForLeaderEpochRequest)
		return r.Version >= 3 && r.ReplicaID >= 0
	}
	a := lookupAPI(key)
	return a == nil || a.interBroker
}
