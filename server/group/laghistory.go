package group

import (
	"sync"
	"time"
)

// Consumer group lag over time, for the admin page's chart: the node
// keeps no metrics history (Prometheus scrapes /metrics and keeps its
// own), so the coordinator samples its groups' lag on a timer
// (Config.LagSampleInterval) into a bounded ring per group. Only the
// groups this node coordinates are sampled; when coordination moves, the
// new coordinator starts a fresh history (the HTTP route is served by the
// group's coordinator, like the group's other routes).

// LagSample is one group's lag at one time.
type LagSample struct {
	// Time is milliseconds since the epoch.
	Time int64 `json:"time"`
	// Lag is the sum over the group's partitions.
	Lag int64 `json:"lag"`
	// Topics is the lag per topic.
	Topics map[string]int64 `json:"topics"`
}

// lagHistory holds the rings; plain code fed samples, so tests script it.
type lagHistory struct {
	mu struct {
		sync.Mutex
		rings map[string]*lagRing
	}
	capacity  int // samples per group
	maxGroups int
}

type lagRing struct {
	samples []LagSample // oldest first once full: start is the oldest
	start   int
}

func newLagHistory(capacity, maxGroups int) *lagHistory {
	h := &lagHistory{capacity: capacity, maxGroups: maxGroups}
	h.mu.rings = map[string]*lagRing{}
	return h
}

// record adds one sample per group in lags (group → topic → lag) at now,
// and forgets groups no longer reported (deleted, or coordinated
// elsewhere now). Groups beyond maxGroups get no history.
func (h *lagHistory) record(now time.Time, lags map[string]map[string]int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for name := range h.mu.rings {
		if _, ok := lags[name]; !ok {
			delete(h.mu.rings, name)
		}
	}
	ms := now.UnixMilli()
	for name, topics := range lags {
		r := h.mu.rings[name]
		if r == nil {
			if len(h.mu.rings) >= h.maxGroups {
				continue
			}
			r = &lagRing{samples: make([]LagSample, 0, min(h.capacity, 16))}
			h.mu.rings[name] = r
		}
		s := LagSample{Time: ms, Topics: topics}
		for _, l := range topics {
			s.Lag += l
		}
		r.add(s, h.capacity)
	}
}

func (r *lagRing) add(s LagSample, capacity int) {
	if len(r.samples) < capacity {
		r.samples = append(r.samples, s)
		return
	}
	r.samples[r.start] = s
	r.start = (r.start + 1) % capacity
}

// history is a copy of a group's samples, oldest first.
func (h *lagHistory) history(name string) ([]LagSample, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.mu.rings[name]
	if r == nil {
		return nil, false
	}
	out := make([]LagSample, 0, len(r.samples))
	out = append(out, r.samples[r.start:]...)
	return append(out, r.samples[:r.start]...), true
}

// SampleLag records every coordinated group's lag now (the timer calls
// it every LagSampleInterval; tests with ManualTick call it themselves).
// Partitions whose lag is unknown are left out.
func (c *Coordinator) SampleLag(now time.Time) {
	lags := map[string]map[string]int64{}
	for _, g := range c.List() {
		parts, ok := c.Lag(g.Group)
		if !ok {
			continue
		}
		topics := map[string]int64{}
		for _, l := range parts {
			if l.Lag >= 0 {
				topics[l.Topic] += l.Lag
			}
		}
		lags[g.Group] = topics
	}
	c.lagHistory.record(now, lags)
}

// LagHistory is a group's lag samples, oldest first, at most
// Config.LagSamples of them; false when the group has none (unknown, not
// coordinated here, or not sampled yet).
func (c *Coordinator) LagHistory(group string) ([]LagSample, bool) {
	return c.lagHistory.history(group)
}

// LagSampleInterval is how often lag is sampled.
func (c *Coordinator) LagSampleInterval() time.Duration { return c.cfg.LagSampleInterval }
