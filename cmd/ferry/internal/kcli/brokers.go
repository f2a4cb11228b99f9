package kcli

import (
	"cmp"
	"fmt"
	"io"
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
