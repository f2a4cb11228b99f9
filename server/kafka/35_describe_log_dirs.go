package kafka

// DescribeLogDirs (key 35), versions 0–4: the replicas this broker holds
// in its one log dir (the data dir), each with its size on disk and how
// far its log end is below the high watermark (Kafka's offsetLag), and
// (v4) the dir's total and usable bytes. Tools read partition sizes per
// broker from it (kafka-log-dirs.sh, Cruise Control, reassignment
// progress). A null topic list asks for every replica.
//
// ACLs: DESCRIBE on the cluster, else CLUSTER_AUTHORIZATION_FAILED (v3+;
// older versions get no directories).

import (
	"cmp"
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/auth"
)

func (s *Server) handleDescribeLogDirs(ctx context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.DescribeLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	if !s.authorizedCluster(ctx, auth.OpDescribe) {
		resp.ErrorCode = codeClusterAuthFailed // v0–v2 have no code: no directories, as Kafka
		return resp
	}
	var wanted map[string]map[int32]bool // nil: all
	if req.Topics != nil {
		wanted = map[string]map[int32]bool{}
		for _, t := range req.Topics {
			if wanted[t.Topic] == nil {
				wanted[t.Topic] = map[int32]bool{}
			}
			for _, p := range t.Partitions {
				wanted[t.Topic][p] = true
			}
		}
	}
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir = s.broker.Config().DataDir
	dir.TotalBytes, dir.UsableBytes = diskSpace(dir.Dir)
	replicas := s.broker.LocalReplicas()
	slices.SortFunc(replicas, func(a, b server.Partition) int {
		if c := cmp.Compare(a.Topic(), b.Topic()); c != 0 {
			return c
		}
		return cmp.Compare(a.Index(), b.Index())
	})
	for _, p := range replicas {
		if wanted != nil && !wanted[p.Topic()][p.Index()] {
			continue
		}
		i := len(dir.Topics) - 1
		if i < 0 || dir.Topics[i].Topic != p.Topic() {
			t := kmsg.NewDescribeLogDirsResponseDirTopic()
			t.Topic = p.Topic()
			dir.Topics = append(dir.Topics, t)
			i++
		}
		dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		dp.Partition, dp.Size = p.Index(), p.Size()
		dp.OffsetLag = max(0, p.HighWatermark()-p.LogEndOffset())
		dir.Topics[i].Partitions = append(dir.Topics[i].Partitions, dp)
	}
	resp.Dirs = append(resp.Dirs, dir)
	return resp
}
