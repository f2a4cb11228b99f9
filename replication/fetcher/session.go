package fetcher

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// session is a Fetcher's incremental fetch session with its leader
// (KIP-227), the client side of Kafka's FetchSessionHandler: the first
// fetch is full (epoch 0) and opens the session; each later one lists
// only the partitions added or whose fetch fields moved (offset, leader
// epoch) and forgets those no longer fetched, and the leader answers
// only the partitions that changed. A session error, any other
// top-level error or a lost connection makes the next fetch a full one
// again (naming the old session, which closes it), as does a leader that
// opened none. Plain state, used by the Fetcher's goroutine only.
type session struct {
	id    int32 // 0: none
	epoch int32 // the next fetch's: 0 is a full fetch
	// sent is each partition's fields as the leader's session holds them
	// once it has read the last fetch; spare is the map the next fetch
	// fills, the one before last's, kept so that a fetch allocates none.
	sent, spare map[key]kmsg.FetchRequestTopicPartition
}

// shape makes req, which lists every partition to fetch, the session's
// next fetch; full reports a full one.
func (s *session) shape(req *kmsg.FetchRequest) (full bool) {
	req.SessionID, req.SessionEpoch = s.id, s.epoch
	wanted := s.spare
	if wanted == nil {
		wanted = make(map[key]kmsg.FetchRequestTopicPartition)
	}
	clear(wanted)
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			wanted[key{t.Topic, p.Partition}] = p
		}
	}
	sent := s.sent
	s.sent, s.spare = wanted, sent
	if s.epoch == 0 {
		return true
	}
	topics := req.Topics[:0]
	for _, t := range req.Topics {
		moved := t.Partitions[:0]
		for _, p := range t.Partitions {
			if before, ok := sent[key{t.Topic, p.Partition}]; !ok || !sameFetch(before, p) {
				moved = append(moved, p)
			}
		}
		if len(moved) > 0 {
			t.Partitions = moved
			topics = append(topics, t)
		}
	}
	req.Topics = topics
	var forgotten map[string]int // topic → its index in ForgottenTopics
	for k := range sent {
		if _, ok := wanted[k]; ok {
			continue
		}
		if forgotten == nil {
			forgotten = map[string]int{}
		}
		i, ok := forgotten[k.topic]
		if !ok {
			i = len(req.ForgottenTopics)
			forgotten[k.topic] = i
			ft := kmsg.NewFetchRequestForgottenTopic()
			ft.Topic = k.topic
			req.ForgottenTopics = append(req.ForgottenTopics, ft)
		}
		req.ForgottenTopics[i].Partitions = append(req.ForgottenTopics[i].Partitions, k.partition)
	}
	return false
}

// sameFetch: the leader's session already holds p's fields.
func sameFetch(a, b kmsg.FetchRequestTopicPartition) bool {
	return a.FetchOffset == b.FetchOffset && a.CurrentLeaderEpoch == b.CurrentLeaderEpoch &&
		a.LastFetchedEpoch == b.LastFetchedEpoch && a.LogStartOffset == b.LogStartOffset &&
		a.PartitionMaxBytes == b.PartitionMaxBytes
}

// answered takes the answer to the fetch shape made; sessionErr is a
// session error, which the next (full) fetch resolves: the answer carries
// nothing else.
func (s *session) answered(resp *kmsg.FetchResponse, full bool) (sessionErr error) {
	switch {
	case resp.ErrorCode == kerr.FetchSessionIDNotFound.Code:
		s.id, s.epoch = 0, 0
		return kerr.FetchSessionIDNotFound
	case resp.ErrorCode != 0:
		s.epoch = 0 // the full fetch names the session, closing it
		switch resp.ErrorCode {
		case kerr.InvalidFetchSessionEpoch.Code, kerr.FetchSessionTopicIDError.Code:
			return kerr.ErrorForCode(resp.ErrorCode)
		}
		return nil
	case resp.SessionID == 0: // none opened, or the leader closed it
		s.id, s.epoch = 0, 0
	case full:
		s.id, s.epoch = resp.SessionID, 1
	default:
		s.epoch = nextEpoch(s.epoch)
	}
	return nil
}

// lost: the fetch had no answer; the next one is full.
func (s *session) lost() { s.epoch = 0 }

func nextEpoch(e int32) int32 {
	if e == 1<<31-1 {
		return 1
	}
	return e + 1
}
