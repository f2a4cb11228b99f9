package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// maxQuotaSeries bounds the entities the quota metrics name one by one:
// client ids are the clients' to choose, and a default quota makes each
// its own entity. Past it, throttling is counted under client_id="(other)".
const maxQuotaSeries = 1000

// quotaMetrics are Kafka's per-entity throttle-time metrics
// (kafka.server:type=Produce|Fetch,user=…,client-id=… throttle-time), as
// counters: rate() of the seconds is the average throttle per second.
type quotaMetrics struct {
	throttle  *prometheus.CounterVec // quota, user, client_id
	throttled *prometheus.CounterVec // quota, user, client_id
	mu        sync.Mutex
	series    map[[3]string]bool
}

func (q *quotaMetrics) register(reg *prometheus.Registry) {
	labels := []string{"quota", "user", "client_id"}
	q.throttle = counterVec("ferry_client_quota_throttle_seconds_total",
		"Throttle time given to responses of the client quota entity (user, client_id; empty when the quota's entity has none), by quota: produce (producer_byte_rate), fetch (consumer_byte_rate) or request (request_percentage).", labels...)
	q.throttled = counterVec("ferry_client_quota_throttled_responses_total",
		"Responses that carried a throttle time for the client quota entity, by quota.", labels...)
	q.series = map[[3]string]bool{}
	reg.MustRegister(q.throttle, q.throttled)
}

// ClientThrottled counts a response's throttle time for a client quota
// entity; quota is "produce", "fetch" or "request".
func (m *Metrics) ClientThrottled(quota, user, clientID string, d time.Duration) {
	if m == nil {
		return
	}
	q := &m.quotas
	key := [3]string{quota, user, clientID}
	q.mu.Lock()
	if !q.series[key] {
		if len(q.series) >= maxQuotaSeries {
			key = [3]string{quota, "", "(other)"}
		}
		q.series[key] = true
	}
	q.mu.Unlock()
	q.throttle.WithLabelValues(key[:]...).Add(d.Seconds())
	q.throttled.WithLabelValues(key[:]...).Inc()
}
