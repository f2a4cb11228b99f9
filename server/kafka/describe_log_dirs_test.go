package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/records"
)

// DescribeLogDirs lists the replicas in the data dir with their sizes
// (what was produced is counted), the dir's disk space at v4, and only the
// asked partitions when a topic list is given.
func TestDescribeLogDirs(t *testing.T) {
	ts := newTestServer(t)
	for _, name := range []string{"a", "b"} {
		if err := ts.broker.CreateTopic(server.TopicSpec{Name: name, Partitions: 2}); err != nil {
			t.Fatal(err)
		}
	}
	c := ts.dial(t)
	if p := produceOne(c, 9, "a", batch(t, records.BatchOptions{}, "one", "two", "three")); p.ErrorCode != 0 {
		t.Fatalf("produce: %d", p.ErrorCode)
	}
	resp := do[*kmsg.DescribeLogDirsResponse](c, kmsg.NewPtrDescribeLogDirsRequest(), 4)
	if len(resp.Dirs) != 1 || resp.Dirs[0].Dir != ts.cfg.DataDir || resp.Dirs[0].TotalBytes <= 0 || resp.Dirs[0].UsableBytes <= 0 {
		t.Fatalf("dirs: %+v", resp.Dirs)
	}
	sizes := map[string]int64{}
	for _, tp := range resp.Dirs[0].Topics {
		for _, p := range tp.Partitions {
			sizes[tp.Topic+"-"+string(rune('0'+p.Partition))] = p.Size
		}
	}
	if sizes["a-0"] <= 0 || sizes["b-0"] != 0 || len(sizes) < 4 {
		t.Fatalf("replica sizes: %v", sizes)
	}

	only := kmsg.NewPtrDescribeLogDirsRequest()
	rt := kmsg.NewDescribeLogDirsRequestTopic()
	rt.Topic, rt.Partitions = "b", []int32{1}
	only.Topics = append(only.Topics, rt)
	resp = do[*kmsg.DescribeLogDirsResponse](c, only, 1)
	if len(resp.Dirs) != 1 || len(resp.Dirs[0].Topics) != 1 || resp.Dirs[0].Topics[0].Topic != "b" ||
		len(resp.Dirs[0].Topics[0].Partitions) != 1 || resp.Dirs[0].Topics[0].Partitions[0].Partition != 1 {
		t.Fatalf("asked for b-1: %+v", resp.Dirs)
	}
}
