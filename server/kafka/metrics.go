package kafka

import (
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/metrics"
)

// listenerMetrics are the Kafka listener's children of Config.Metrics.
// A request only indexes an array; each API's series are created on its
// first request, so /metrics lists the APIs clients use, not all of them.
type listenerMetrics struct {
	m     *metrics.Metrics // nil: metrics off
	conns *metrics.Listener
	// byKey holds each API key's request metrics once used; the last
	// entry is for keys outside the table ("unknown").
	byKey []atomic.Pointer[metrics.Request]
}

func newListenerMetrics(m *metrics.Metrics) listenerMetrics {
	if m == nil {
		return listenerMetrics{}
	}
	maxKey := int16(0)
	for _, a := range apis {
		maxKey = max(maxKey, a.key)
	}
	return listenerMetrics{m: m, conns: m.Listener(metrics.ListenerKafka),
		byKey: make([]atomic.Pointer[metrics.Request], maxKey+2)}
}

// request returns the metrics of an API key (nil when metrics are off).
func (lm *listenerMetrics) request(key int16) *metrics.Request {
	if lm.m == nil {
		return nil
	}
	slot, name := len(lm.byKey)-1, "unknown"
	if lookupAPI(key) != nil {
		slot, name = int(key), kmsg.NameForKey(key)
	}
	if r := lm.byKey[slot].Load(); r != nil {
		return r
	}
	r := lm.m.Request(metrics.ListenerKafka, name) // same children if two race here
	lm.byKey[slot].Store(r)
	return r
}

// served counts a served request's failed partitions and returns the
// API's metrics, which the connection's reader times the request with.
func (lm *listenerMetrics) served(key int16, resp kmsg.Response) *metrics.Request {
	r := lm.request(key)
	if r != nil && resp != nil {
		eachErrorCode(resp, func(code int16) { r.Failed(errorName(code), 1) })
	}
	return r
}

// failedDecode counts a request that closed the connection unserved, as
// an INVALID_REQUEST failure of its API, and returns the API's metrics.
func (lm *listenerMetrics) failedDecode(key int16) *metrics.Request {
	r := lm.request(key)
	r.Failed(errorName(codeInvalidRequest), 1)
	return r
}

func errorName(code int16) string {
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return e.Message
	}
	return "UNKNOWN_SERVER_ERROR"
}

// eachErrorCode calls fn for every non-zero error code of the responses
// whose failures operators watch: per partition for the data APIs, per
// topic or whole request for the others. APIs not listed count requests
// and latency only. The audit log (audit.go) reads the administrative
// APIs' outcomes from here too.
func eachErrorCode(resp kmsg.Response, fn func(int16)) {
	check := func(c int16) {
		if c != 0 {
			fn(c)
		}
	}
	switch r := resp.(type) {
	case *kmsg.ProduceResponse:
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				check(r.Topics[i].Partitions[j].ErrorCode)
			}
		}
	case *kmsg.FetchResponse:
		check(r.ErrorCode)
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				check(r.Topics[i].Partitions[j].ErrorCode)
			}
		}
	case *kmsg.ListOffsetsResponse:
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				check(r.Topics[i].Partitions[j].ErrorCode)
			}
		}
	case *kmsg.OffsetCommitResponse:
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				check(r.Topics[i].Partitions[j].ErrorCode)
			}
		}
	case *kmsg.OffsetFetchResponse:
		check(r.ErrorCode)
	case *kmsg.MetadataResponse:
		for i := range r.Topics {
			check(r.Topics[i].ErrorCode)
		}
	case *kmsg.CreateTopicsResponse:
		for i := range r.Topics {
			check(r.Topics[i].ErrorCode)
		}
	case *kmsg.DeleteTopicsResponse:
		for i := range r.Topics {
			check(r.Topics[i].ErrorCode)
		}
	case *kmsg.FindCoordinatorResponse:
		check(r.ErrorCode)
		for i := range r.Coordinators {
			check(r.Coordinators[i].ErrorCode)
		}
	case *kmsg.JoinGroupResponse:
		check(r.ErrorCode)
	case *kmsg.SyncGroupResponse:
		check(r.ErrorCode)
	case *kmsg.HeartbeatResponse:
		check(r.ErrorCode)
	case *kmsg.LeaveGroupResponse:
		check(r.ErrorCode)
	case *kmsg.InitProducerIDResponse:
		check(r.ErrorCode)
	case *kmsg.ApiVersionsResponse:
		check(r.ErrorCode)
	case *kmsg.SASLHandshakeResponse:
		check(r.ErrorCode)
	case *kmsg.SASLAuthenticateResponse: // failed logins, for alerts on password guessing
		check(r.ErrorCode)
	case *kmsg.AlterUserSCRAMCredentialsResponse:
		for i := range r.Results {
			check(r.Results[i].ErrorCode)
		}
	case *kmsg.DeleteRecordsResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				check(p.ErrorCode)
			}
		}
	case *kmsg.AlterConfigsResponse:
		for _, res := range r.Resources {
			check(res.ErrorCode)
		}
	case *kmsg.IncrementalAlterConfigsResponse:
		for _, res := range r.Resources {
			check(res.ErrorCode)
		}
	case *kmsg.CreatePartitionsResponse:
		for _, t := range r.Topics {
			check(t.ErrorCode)
		}
	case *kmsg.DeleteGroupsResponse:
		for _, g := range r.Groups {
			check(g.ErrorCode)
		}
	case *kmsg.OffsetDeleteResponse:
		check(r.ErrorCode)
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				check(p.ErrorCode)
			}
		}
	case *kmsg.ElectLeadersResponse:
		check(r.ErrorCode)
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != kerr.ElectionNotNeeded.Code { // already led by its preferred replica
					check(p.ErrorCode)
				}
			}
		}
	case *kmsg.AlterPartitionAssignmentsResponse:
		check(r.ErrorCode)
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				check(p.ErrorCode)
			}
		}
	case *kmsg.CreateACLsResponse:
		for _, res := range r.Results {
			check(res.ErrorCode)
		}
	case *kmsg.DeleteACLsResponse:
		for _, res := range r.Results {
			check(res.ErrorCode)
		}
	case *kmsg.AlterClientQuotasResponse:
		for _, e := range r.Entries {
			check(e.ErrorCode)
		}
	}
}
