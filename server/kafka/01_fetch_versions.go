package kafka

// Fetch versions around handleFetch, which serves topics named by name and
// answers record batches: v13+ name topics by id only (KIP-516), resolved
// here before the fetch and put back in the answer (an unknown id answers
// UNKNOWN_TOPIC_ID per partition, as Kafka does); v0–v3 get message sets
// (downConvertFetch). v15's ReplicaState, v16's leader hints (KIP-951,
// empty: one node never answers NOT_LEADER) and v17's ReplicaDirectoryId
// need nothing more.

import (
	"context"
	"encoding/hex"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// firstTopicIDFetchVersion is the first Fetch version that names topics by id.
const firstTopicIDFetchVersion = 13

func (s *Server) serveFetch(ctx context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.FetchRequest)
	sess, sessionErr := s.beginFetchSession(ctx, req)
	if sessionErr != nil {
		return sessionErr
	}
	unknownIDs := s.resolveFetchTopicIDs(req)
	ans, ok := s.handleFetch(ctx, req).(*fetchAnswer)
	if !ok {
		return nil
	}
	s.answerFetchSession(req, ans, sess, unknownIDs)
	if ans.chunks != nil {
		if hook := testHookBeforeOpenSections.Load(); hook != nil {
			(*hook)()
		}
		parts, err := openSections(ans.FetchResponse, ans.chunks, requestClientFrom(ctx).files)
		if err != nil {
			// A segment went (retention) or changed since the read: read
			// again, into memory, which answers what the log holds now.
			s.logger.Debug("fetch: copying instead of sendfile", "err", err)
			ctx = withoutSendfile(ctx)
			if ans, ok = s.handleFetch(ctx, req).(*fetchAnswer); !ok {
				return nil
			}
			s.answerFetchSession(req, ans, sess, unknownIDs)
		} else {
			return &sendfileFetch{FetchResponse: ans.FetchResponse, parts: parts}
		}
	}
	return s.downConvertFetch(req, ans.FetchResponse)
}

// withoutSendfile makes a request's fetches copy their batches.
func withoutSendfile(ctx context.Context) context.Context {
	rc := requestClientFrom(ctx)
	rc.sendfile = false
	return context.WithValue(ctx, requestClientKey{}, rc)
}

// resolveFetchTopicIDs names each topic of a v13+ request by its id. Ids
// no topic has are returned; their topics get a name no topic can have
// (distinct per id, so two unknown ids are not one topic twice).
func (s *Server) resolveFetchTopicIDs(req *kmsg.FetchRequest) map[[16]byte]bool {
	if req.Version < firstTopicIDFetchVersion {
		return nil
	}
	unknown := map[[16]byte]bool{}
	for i := range req.Topics {
		t := &req.Topics[i]
		name, ok := s.broker.TopicByID(t.TopicID)
		if !ok {
			unknown[t.TopicID] = true
			name = "\x00unknown topic id " + hex.EncodeToString(t.TopicID[:])
		}
		t.Topic = name
	}
	return unknown
}

// answerFetchTopicIDs puts each topic's id in the answer; the answer's
// topics are the request's, in order.
func answerFetchTopicIDs(req *kmsg.FetchRequest, resp *kmsg.FetchResponse, unknownIDs map[[16]byte]bool) {
	for i := range resp.Topics {
		if i >= len(req.Topics) {
			return
		}
		rt := &resp.Topics[i]
		rt.TopicID = req.Topics[i].TopicID
		if !unknownIDs[rt.TopicID] {
			continue
		}
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			rp.ErrorCode, rp.RecordBatches = kerr.UnknownTopicID.Code, []byte{}
			rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
		}
	}
}
