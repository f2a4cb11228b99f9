package forward

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/replication/controller"
	"github.com/ferry-mq/ferry/server"
)

// The admin operations server.Admin sends to other brokers: those for
// the controller to the broker the caller names (its cluster view's
// controller), and DescribeLogDirs for a move's progress. Like Fetch they
// go to that broker by id, through the guard, never to whichever broker
// franz-go's metadata last named.

var _ server.AdminPeers = (*Forwarder)(nil)

// Controller implements server.AdminPeers.
func (f *Forwarder) Controller(id int32) server.ControllerAdmin { return controllerAt{f: f, id: id} }

// controllerAt sends the controller's operations to broker id.
type controllerAt struct {
	f  *Forwarder
	id int32
}

func (c controllerAt) request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	// Not reached or not answered: server.Admin asks again, the
	// controller being perhaps another broker by then.
	if err := c.f.learn(ctx, c.id); err != nil {
		return nil, fmt.Errorf("%w: %v", server.ErrControllerNotAvailable, err)
	}
	resp, err := c.f.cl.Broker(int(c.id)).Request(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("%w: broker %d: %v", server.ErrControllerNotAvailable, c.id, err)
	}
	return resp, nil
}

func (c controllerAt) ElectLeaders(ctx context.Context, typ controller.ElectionType, parts []controller.TopicPartition) (map[controller.TopicPartition]error, error) {
	req := kmsg.NewPtrElectLeadersRequest()
	req.ElectionType = int8(typ)
	req.TimeoutMillis = timeoutMillis(ctx)
	if parts != nil {
		req.Topics = []kmsg.ElectLeadersRequestTopic{}
	}
	for _, run := range topicRuns(parts) {
		rt := kmsg.NewElectLeadersRequestTopic()
		rt.Topic, rt.Partitions = run.topic, run.partitions
		req.Topics = append(req.Topics, rt)
	}
	kresp, err := c.request(ctx, req)
	if err != nil {
		return nil, err
	}
	resp := kresp.(*kmsg.ElectLeadersResponse)
	if resp.ErrorCode != 0 {
		return nil, answered(resp.ErrorCode, nil)
	}
	out := map[controller.TopicPartition]error{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[controller.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = answered(p.ErrorCode, p.ErrorMessage)
		}
	}
	return out, nil
}

func (c controllerAt) AlterReassignments(ctx context.Context, targets map[controller.TopicPartition][]int32) (map[controller.TopicPartition]error, error) {
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	req.TimeoutMillis = timeoutMillis(ctx)
	for _, run := range topicRuns(server.SortedPartitions(targets)) {
		rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
		rt.Topic = run.topic
		for _, p := range run.partitions {
			rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
			rp.Partition, rp.Replicas = p, targets[controller.TopicPartition{Topic: run.topic, Partition: p}]
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	kresp, err := c.request(ctx, req)
	if err != nil {
		return nil, err
	}
	resp := kresp.(*kmsg.AlterPartitionAssignmentsResponse)
	if resp.ErrorCode != 0 {
		return nil, answered(resp.ErrorCode, resp.ErrorMessage)
	}
	out := map[controller.TopicPartition]error{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[controller.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = answered(p.ErrorCode, p.ErrorMessage)
		}
	}
	return out, nil
}

func (c controllerAt) Reassignments(ctx context.Context) (map[controller.TopicPartition]controller.Assignment, error) {
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	req.TimeoutMillis = timeoutMillis(ctx)
	kresp, err := c.request(ctx, req)
	if err != nil {
		return nil, err
	}
	resp := kresp.(*kmsg.ListPartitionReassignmentsResponse)
	if resp.ErrorCode != 0 {
		return nil, answered(resp.ErrorCode, resp.ErrorMessage)
	}
	out := map[controller.TopicPartition]controller.Assignment{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[controller.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = controller.Assignment{
				Replicas: p.Replicas, Adding: p.AddingReplicas, Removing: p.RemovingReplicas}
		}
	}
	return out, nil
}

// LogDirSizes implements server.AdminPeers.
func (f *Forwarder) LogDirSizes(ctx context.Context, broker int32, parts []controller.TopicPartition) (map[controller.TopicPartition]int64, error) {
	if err := f.learn(ctx, broker); err != nil {
		return nil, err
	}
	req := kmsg.NewPtrDescribeLogDirsRequest()
	for _, run := range topicRuns(parts) {
		rt := kmsg.NewDescribeLogDirsRequestTopic()
		rt.Topic, rt.Partitions = run.topic, run.partitions
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, f.cl.Broker(int(broker)))
	if err != nil {
		return nil, fmt.Errorf("describe the log dirs of broker %d: %w", broker, err)
	}
	if resp.ErrorCode != 0 {
		return nil, fmt.Errorf("describe the log dirs of broker %d: %w", broker, answered(resp.ErrorCode, nil))
	}
	out := map[controller.TopicPartition]int64{}
	for _, d := range resp.Dirs {
		for _, t := range d.Topics {
			for _, p := range t.Partitions {
				out[controller.TopicPartition{Topic: t.Topic, Partition: p.Partition}] += p.Size
			}
		}
	}
	return out, nil
}

// answered is a code another broker answered as the core's error (nil
// for none), its message the broker's own when it sent one.
func answered(code int16, msg *string) error {
	if code == 0 {
		return nil
	}
	err := server.ErrorForKafkaCode(code)
	if err == nil {
		err = kerr.ErrorForCode(code)
	}
	if msg == nil || *msg == "" {
		return err
	}
	return &remoteError{err: err, msg: *msg}
}

// remoteError reads as the answering broker's message and unwraps to the
// error its code stands for.
type remoteError struct {
	err error
	msg string
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.err }

// timeoutMillis is the request's timeout for the controller: ctx's
// deadline (the caller bounds every forward), else Kafka's default.
func timeoutMillis(ctx context.Context) int32 {
	if d, ok := ctx.Deadline(); ok {
		return int32(max(min(time.Until(d).Milliseconds(), 1<<30), 1))
	}
	return 30_000
}

// topicRun is consecutive partitions of one topic, as Kafka requests
// list them.
type topicRun struct {
	topic      string
	partitions []int32
}

// topicRuns groups parts, in their order, into runs of one topic each.
func topicRuns(parts []controller.TopicPartition) []topicRun {
	var runs []topicRun
	for _, tp := range parts {
		if i := len(runs) - 1; i >= 0 && runs[i].topic == tp.Topic {
			runs[i].partitions = append(runs[i].partitions, tp.Partition)
			continue
		}
		runs = append(runs, topicRun{topic: tp.Topic, partitions: []int32{tp.Partition}})
	}
	return runs
}
