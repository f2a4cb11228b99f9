package kafka

// Incremental fetch sessions (KIP-227) around the Fetch handler: the
// session cache (fetchsession) says what an incremental fetch asks for —
// every partition of its session, from the offsets its client last sent —
// and the fetch is served as a full one; its answer then keeps only the
// partitions whose state changed, and names the session. A session error
// is the whole answer: its error code, SessionID 0, no topics, as Kafka's
// SessionErrorContext answers.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/auth"
	"github.com/ferry-mq/ferry/server/kafka/fetchsession"
)

// beginFetchSession sets req.Topics to what the fetch reads; a non-nil
// response is a session error to answer at once.
func (s *Server) beginFetchSession(ctx context.Context, req *kmsg.FetchRequest) (*fetchsession.Fetch, kmsg.Response) {
	sess := s.fetchSessions.Begin(fetchsession.Request{Version: req.Version, Follower: fetchingReplica(req) >= 0,
		Owner: auth.PrincipalFrom(ctx), SessionID: req.SessionID, SessionEpoch: req.SessionEpoch,
		Topics: req.Topics, Forgotten: req.ForgottenTopics}, time.Now())
	if sess.ErrorCode != 0 {
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = sess.ErrorCode
		return nil, resp
	}
	req.Topics = sess.Topics
	return sess, nil
}

// throttledFetch answers a consumer held back by its quota: nothing read,
// the throttle time, and its session kept (KIP-219 with KIP-227: a session
// answer of no partitions changes nothing the client knows).
func (s *Server) throttledFetch(ctx context.Context, req *kmsg.FetchRequest, ms int32) kmsg.Response {
	sess, sessionErr := s.beginFetchSession(ctx, req)
	if sessionErr != nil {
		return sessionErr
	}
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	resp.ThrottleMillis = ms
	if req.Version >= fetchsession.FirstVersion {
		resp.SessionID = sess.Unanswered()
	}
	return resp
}

// answerFetchSession names the answer's topics by id (v13+), gives it
// its session id and, for an incremental fetch, leaves out the partitions
// that did not change.
func (s *Server) answerFetchSession(req *kmsg.FetchRequest, ans *fetchAnswer, sess *fetchsession.Fetch, unknownIDs map[[16]byte]bool) {
	if req.Version >= firstTopicIDFetchVersion {
		answerFetchTopicIDs(req, ans.FetchResponse, unknownIDs)
	}
	var onDisk func(int) bool
	if ans.chunks != nil {
		onDisk = func(k int) bool { return k < len(ans.chunks) && len(ans.chunks[k]) > 0 }
	}
	id, send := sess.Answer(req.Topics, ans.FetchResponse, onDisk, time.Now())
	if req.Version >= fetchsession.FirstVersion {
		ans.SessionID = id
	}
	if send != nil {
		ans.keepOnly(send)
	}
}

// keepOnly drops the partitions not to send (send[k] false for the k-th,
// in answer order), and the topics left without any.
func (ans *fetchAnswer) keepOnly(send []bool) {
	topics := ans.Topics[:0]
	var chunks [][]server.Chunk
	if ans.chunks != nil {
		chunks = ans.chunks[:0]
	}
	k := 0
	for _, t := range ans.Topics {
		parts := t.Partitions[:0]
		for _, p := range t.Partitions {
			if k < len(send) && send[k] {
				parts = append(parts, p)
				if ans.chunks != nil {
					chunks = append(chunks, ans.chunks[k])
				}
			}
			k++
		}
		if len(parts) > 0 {
			t.Partitions = parts
			topics = append(topics, t)
		}
	}
	clear(ans.Topics[len(topics):])
	ans.Topics = topics
	if ans.chunks != nil {
		ans.chunks = chunks
	}
}
