package kcli

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
)

// BrokerLoad is one broker's share of the cluster: the replicas it holds,
// the partitions it leads and the bytes of its replicas on disk.
type BrokerLoad struct {
	ID         int32
	Addr       string
	Rack       string
	Controller bool
	Replicas   int
	Leaders    int
	Bytes      int64 // -1: the broker did not answer DescribeLogDirs
}

// Loads counts each live broker's replicas and leaderships from md and
// its bytes from dirs (DescribeLogDirs of every broker).
func Loads(md kadm.Metadata, dirs kadm.DescribedAllLogDirs) []BrokerLoad {
	byID := map[int32]*BrokerLoad{}
	for _, b := range md.Brokers {
		l := &BrokerLoad{ID: b.NodeID, Addr: fmt.Sprintf("%s:%d", b.Host, b.Port), Controller: b.NodeID == md.Controller, Bytes: -1}
		if b.Rack != nil {
			l.Rack = *b.Rack
		}
		byID[b.NodeID] = l
	}
	for _, t := range md.Topics {
		for _, p := range t.Partitions {
			if l, ok := byID[p.Leader]; ok {
				l.Leaders++
			}
			for _, r := range p.Replicas {
				if l, ok := byID[r]; ok {
					l.Replicas++
				}
			}
		}
	}
	for id, ds := range dirs {
		l, ok := byID[id]
		if !ok {
			continue
		}
		ds.Each(func(d kadm.DescribedLogDir) {
			if d.Err != nil {
				return
			}
			if l.Bytes < 0 {
				l.Bytes = 0
			}
			d.Topics.Each(func(p kadm.DescribedLogDirPartition) { l.Bytes += p.Size })
		})
	}
	out := make([]BrokerLoad, 0, len(byID))
	for _, l := range byID {
		out = append(out, *l)
	}
	slices.SortFunc(out, func(a, b BrokerLoad) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// WriteLoads prints the loads as a table.
func WriteLoads(w io.Writer, loads []BrokerLoad) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BROKER\tADDRESS\tRACK\tCONTROLLER\tREPLICAS\tLEADERS\tBYTES")
	for _, l := range loads {
		ctl, rack, bytes := "", l.Rack, "-"
		if l.Controller {
			ctl = "yes"
		}
		if rack == "" {
			rack = "-"
		}
		if l.Bytes >= 0 {
			bytes = fmt.Sprint(l.Bytes)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%d\t%s\n", l.ID, l.Addr, rack, ctl, l.Replicas, l.Leaders, bytes)
	}
	tw.Flush()
}

// Drain plans moving every replica off broker: each partition holding one
// gets, in its place, the live broker holding fewest replicas (counting
// the plan so far) that the partition does not already use. The other
// replicas stay where they are, so only the drained broker's data moves.
func Drain(md kadm.Metadata, broker int32) (Reassignment, error) {
	load := map[int32]int{}
	for _, b := range md.Brokers {
		if b.NodeID != broker {
			load[b.NodeID] = 0
		}
	}
	for _, t := range md.Topics {
		for _, p := range t.Partitions {
			for _, r := range p.Replicas {
				if _, ok := load[r]; ok {
					load[r]++
				}
			}
		}
	}
	plan := Reassignment{Version: 1}
	for _, topic := range slices.Sorted(maps.Keys(md.Topics)) {
		for _, p := range md.Topics[topic].Partitions.Sorted() {
			i := slices.Index(p.Replicas, broker)
			if i < 0 {
				continue
			}
			best := int32(-1)
			for _, id := range slices.Sorted(maps.Keys(load)) {
				if slices.Contains(p.Replicas, id) {
					continue
				}
				if best < 0 || load[id] < load[best] {
					best = id
				}
			}
			if best < 0 {
				return plan, fmt.Errorf("%s-%d has %d replicas and only %d other brokers are live: nowhere to move broker %d's",
					topic, p.Partition, len(p.Replicas), len(load), broker)
			}
			target := slices.Clone(p.Replicas)
			target[i] = best
			load[best]++
			plan.Partitions = append(plan.Partitions, move(topic, p.Partition, target))
		}
	}
	return plan, nil
}
