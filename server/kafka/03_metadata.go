package kafka

// Metadata (key 3), versions 0–12.
//
// On a single node: one broker (this node, at the advertised address),
// which is also the controller; every partition is led by it with itself
// as the only replica and ISR, and no offline replicas. On a cluster's
// broker, once the controller has sent UpdateMetadata: its live brokers and
// controller, and each partition's leader, epoch, replicas, ISR and
// offline replicas from that view (a partition without a leader answers
// LEADER_NOT_AVAILABLE), as Kafka's MetadataCache. v0 with no topics and v1+ with null
// topics list every topic. Unknown topics are created when the broker's
// auto.create.topics.enable is on and the request allows it: always for
// v0–3, AllowAutoTopicCreation for v4+. Unlike Kafka, which answers
// LEADER_NOT_AVAILABLE until a new topic's leaders are elected, the created
// topic is returned at once (creation is synchronous on one node). One
// request auto-creates at most server.MaxAutoCreatePerRequest topics; the
// others answer UNKNOWN_TOPIC_OR_PARTITION (retriable), so a request naming
// 100k topics cannot create them all; the broker's max.partitions bound
// (POLICY_VIOLATION) holds across requests. v10+
// carry topic ids; topics requested by id alone are looked up by id.
// ACLs, as Kafka: listing every topic leaves out those the principal may
// not DESCRIBE; a named one it may not DESCRIBE answers
// TOPIC_AUTHORIZATION_FAILED whether it exists or not, and so does an
// unknown one it may DESCRIBE but not CREATE (on the cluster or the
// topic) when auto-creation would create it; a topic that exists needs no
// CREATE (so no refusal is logged for it). Authorized operations (v8+)
// are computed when asked for; otherwise the fields keep Kafka's "not
// requested" value.
//
// Brokers and leaders are answered on the listener the request came on
// (Kafka's behaviour): a broker without that listener is left out, and a
// partition it leads answers LEADER_NOT_AVAILABLE with leader -1 (Kafka
// v6+ says LISTENER_NOT_FOUND; both are retriable).

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/auth"
)

func (s *Server) handleMetadata(ctx context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.MetadataRequest)
	resp := s.metadata(ctx, req)
	if req.IncludeClusterAuthorizedOperations && req.Version <= 10 {
		resp.AuthorizedOperations = s.authorizedOperations(ctx, auth.ResourceCluster, auth.ClusterName)
	}
	if req.IncludeTopicAuthorizedOperations {
		for i := range resp.Topics {
			if mt := &resp.Topics[i]; mt.ErrorCode == 0 && mt.Topic != nil {
				mt.AuthorizedOperations = s.authorizedOperations(ctx, auth.ResourceTopic, *mt.Topic)
			}
		}
	}
	return resp
}

func (s *Server) metadata(ctx context.Context, req *kmsg.MetadataRequest) *kmsg.MetadataResponse {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	listener := requestClientFrom(ctx).listener
	resp.Brokers = []kmsg.MetadataResponseBroker{s.brokerEntry(listener)}
	clusterID := s.broker.ClusterID()
	resp.ClusterID = &clusterID
	resp.ControllerID = s.broker.BrokerID()
	view, _ := s.broker.Cluster()
	if view != nil {
		resp.Brokers, resp.ControllerID = clusterBrokers(view, listener), view.ControllerID
	}
	defer hideUnreachableLeaders(resp)
	all := req.Topics == nil || req.Version == 0 && len(req.Topics) == 0
	if all {
		// Every topic of the cluster, held here or not (Kafka answers from
		// its metadata cache).
		names := s.broker.Topics()
		for _, name := range view.TopicNames() {
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		for _, name := range names {
			if !s.authorizedTopic(ctx, auth.OpDescribe, name) {
				continue
			}
			resp.Topics = append(resp.Topics, s.topicMetadata(name, nil, view))
		}
		return resp
	}
	autoCreate := s.broker.Config().AutoCreateTopics && (req.Version < 4 || req.AllowAutoTopicCreation)
	budget := 0
	if autoCreate {
		budget = server.MaxAutoCreatePerRequest
	}
	for _, t := range req.Topics {
		if t.Topic == nil {
			resp.Topics = append(resp.Topics, s.topicMetadataByID(ctx, t.TopicID, view))
			continue
		}
		name := *t.Topic
		if !s.authorizedTopic(ctx, auth.OpDescribe, name) {
			resp.Topics = append(resp.Topics, deniedTopicMetadata(&name, t.TopicID))
			continue
		}
		if autoCreate && s.aclsOn() && s.topicKnown(name, view) {
			// Nothing to create, so nothing to authorize: librdkafka asks
			// with AllowAutoTopicCreation on every refresh, and a CREATE
			// check here would log a refusal for each principal without
			// CREATE. Deleted meanwhile, it answers UNKNOWN_TOPIC_OR_PARTITION
			// (retriable) rather than being created unchecked.
			resp.Topics = append(resp.Topics, s.topicMetadata(name, nil, view))
			continue
		}
		// Kafka asks the cluster quietly and logs the topic's refusal alone.
		if autoCreate && s.aclsOn() && !s.allows(ctx, auth.OpCreate, auth.ResourceCluster, auth.ClusterName) &&
			!s.authorizedTopic(ctx, auth.OpCreate, name) {
			mt := s.topicMetadata(name, nil, view)
			if mt.ErrorCode == codeUnknownTopicOrPart {
				mt = deniedTopicMetadata(&name, t.TopicID)
			}
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		resp.Topics = append(resp.Topics, s.topicMetadata(name, &budget, view))
	}
	return resp
}

// topicKnown reports whether name exists, here or, on a cluster, in the
// controller's view only.
func (s *Server) topicKnown(name string, view *server.ClusterView) bool {
	_, err := s.broker.PartitionCount(name)
	return !errors.Is(err, server.ErrUnknownTopic) || view.PartitionsFrom(name, 0) > 0
}

func deniedTopicMetadata(name *string, id [16]byte) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic, mt.TopicID, mt.ErrorCode = name, id, codeTopicAuthFailed
	return mt
}

// brokerEntry is this node on the named listener (the first listener
// when the name is unknown, as for a request that came on none).
func (s *Server) brokerEntry(name string) kmsg.MetadataResponseBroker {
	l := s.listenerNamed(name)
	if l == nil {
		l = s.listeners[0]
	}
	b := kmsg.NewMetadataResponseBroker()
	b.NodeID, b.Host, b.Port = s.broker.BrokerID(), l.host, l.port
	return b
}

// clusterBrokers lists the view's live brokers that have the named
// listener, by id.
func clusterBrokers(view *server.ClusterView, name string) []kmsg.MetadataResponseBroker {
	out := make([]kmsg.MetadataResponseBroker, 0, len(view.Brokers))
	for _, cb := range view.Brokers {
		host, port, ok := brokerEndpoint(cb, name)
		if !ok {
			continue
		}
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID, b.Host, b.Port = cb.ID, host, port
		if cb.Rack != "" {
			rack := cb.Rack
			b.Rack = &rack
		}
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b kmsg.MetadataResponseBroker) int { return cmp.Compare(a.NodeID, b.NodeID) })
	return out
}

// hideUnreachableLeaders answers LEADER_NOT_AVAILABLE for partitions
// whose leader is not among resp's brokers (it has no endpoint on this
// listener), so clients never look for a broker they were not given.
func hideUnreachableLeaders(resp *kmsg.MetadataResponse) {
	for ti := range resp.Topics {
		ps := resp.Topics[ti].Partitions
		for pi := range ps {
			if ps[pi].Leader < 0 || slices.ContainsFunc(resp.Brokers, func(b kmsg.MetadataResponseBroker) bool { return b.NodeID == ps[pi].Leader }) {
				continue
			}
			ps[pi].Leader, ps[pi].ErrorCode = -1, kerr.LeaderNotAvailable.Code
		}
	}
}

func (s *Server) topicMetadataByID(ctx context.Context, id [16]byte, view *server.ClusterView) kmsg.MetadataResponseTopic {
	name, ok := s.broker.TopicByID(id)
	if ok && !s.authorizedTopic(ctx, auth.OpDescribe, name) {
		return deniedTopicMetadata(nil, id)
	}
	if !ok {
		mt := kmsg.NewMetadataResponseTopic()
		mt.TopicID = id
		mt.ErrorCode = codeUnknownTopicID
		return mt
	}
	return s.topicMetadata(name, nil, view)
}

// topicMetadata describes one topic; an unknown one is created while
// *createBudget (nil: none) lasts, each creation taking one. With a
// cluster view, partitions are as the controller described them.
func (s *Server) topicMetadata(name string, createBudget *int, view *server.ClusterView) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic = &name
	mt.IsInternal = server.IsInternalTopic(name)
	if err := server.ValidateTopicName(name); err != nil {
		mt.ErrorCode = codeInvalidTopic
		return mt
	}
	n, err := s.broker.PartitionCount(name)
	elsewhere := errors.Is(err, server.ErrUnknownTopic) && view.PartitionsFrom(name, 0) > 0
	if elsewhere {
		n, err = 0, nil // held on other brokers only: the view describes it
	}
	if errors.Is(err, server.ErrUnknownTopic) && createBudget != nil && *createBudget > 0 && !server.IsInternalTopic(name) {
		*createBudget--
		if err = s.broker.CreateTopic(server.TopicSpec{Name: name}); err == nil || errors.Is(err, server.ErrTopicExists) {
			n, err = s.broker.PartitionCount(name)
		}
	}
	if err != nil {
		mt.ErrorCode = errorCode(err)
		return mt
	}
	if mt.TopicID, err = s.broker.TopicID(name); err != nil && !elsewhere {
		mt.ErrorCode = errorCode(err)
		return mt
	}
	n = view.PartitionsFrom(name, n)
	mt.Partitions = make([]kmsg.MetadataResponseTopicPartition, 0, n)
	for i := range n {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = i
		mp.OfflineReplicas = []int32{}
		pv, inView := view.Partition(name, i)
		p, err := s.broker.Partition(name, i)
		switch {
		case inView: // the controller's word, for every partition
			mp.Leader, mp.LeaderEpoch, mp.Replicas, mp.ISR = pv.Leader, pv.LeaderEpoch, pv.Replicas, pv.ISR
			mp.OfflineReplicas = append(mp.OfflineReplicas, pv.Offline...)
		case err == nil:
			mp.Leader, mp.LeaderEpoch, mp.Replicas, mp.ISR = p.Leader(), p.LeaderEpoch(), p.Replicas(), p.ISR()
		default:
			// Another broker's partition the controller has not described
			// yet (a broker just restarted), or one going away: clients
			// require every partition of a topic listed, so it is listed
			// without a leader and asked again.
			mp.Leader, mp.LeaderEpoch, mp.Replicas, mp.ISR = -1, -1, []int32{}, []int32{}
		}
		if self := s.broker.BrokerID(); mp.Leader == self && err == nil && p.Leader() == self && p.CheckLeading() != nil {
			// This broker leads the partition but fenced itself (cut from
			// ZooKeeper, replication/fence): its view is stale, another
			// broker leads or will shortly, so clients ask again elsewhere.
			mp.Leader = -1
		}
		if mp.Leader < 0 {
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}
