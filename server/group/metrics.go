package group

import "github.com/ferry-mq/ferry/server/metrics"

// LagStats yields every group's lag per partition, for
// metrics.AddLagSource; it is read at scrape time, through Lag.
func (c *Coordinator) LagStats(yield func(metrics.LagStat) bool) {
	for _, g := range c.List() {
		lags, ok := c.Lag(g.Group)
		if !ok {
			continue
		}
		for _, l := range lags {
			if !yield(metrics.LagStat{Group: g.Group, Topic: l.Topic, Partition: l.Partition, Lag: l.Lag}) {
				return
			}
		}
	}
}
