package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// api is one served Kafka API: its key, the versions served, the handler.
type api struct {
	key      int16
	min, max int16
	serve    func(s *Server, ctx context.Context, req kmsg.Request) kmsg.Response
}

const (
	produceKey     = 0
	apiVersionsKey = 18
)

// apis is the one table of what this listener serves; ApiVersions
// advertises exactly these ranges, and a request outside them closes the
// connection (ApiVersions excepted, which Kafka always answers).
//
// Every API starts at the first version Kafka 3.9 serves (v0 for all of
// these): Kafka 4.0 dropped the older ones (KIP-896), but tools still in
// use send them (Burrow's ListOffsets v0, pre-0.11 clients' Fetch and
// Produce with the old message formats).
//
// Not served: transactions (24–28; no transaction.version feature),
// SASL (17, 36), ACLs, KIP-848 and share groups, telemetry, controller
// and inter-broker APIs. Each range also ends at Kafka 3.9's newest version.
var apis []api

// apiByKey indexes apis by key.
var apiByKey map[int16]*api

func init() { // a var initializer would be a cycle: ApiVersions reads apis
	apis = []api{
		{0, 0, 11, (*Server).handleProduce},
		{1, 0, 17, (*Server).serveFetch},
		{2, 0, 9, (*Server).handleListOffsets},
		{3, 0, 12, (*Server).handleMetadata},
		{8, 0, 9, (*Server).handleOffsetCommit},
		{9, 0, 9, (*Server).handleOffsetFetch},
		{10, 0, 5, (*Server).handleFindCoordinator},
		{11, 0, 9, (*Server).handleJoinGroup},
		{12, 0, 4, (*Server).handleHeartbeat},
		{13, 0, 5, (*Server).handleLeaveGroup},
		{14, 0, 5, (*Server).handleSyncGroup},
		{15, 0, 5, (*Server).handleDescribeGroups},
		{16, 0, 5, (*Server).handleListGroups},
		{18, 0, 4, (*Server).handleApiVersions},
		{19, 0, 7, (*Server).handleCreateTopics},
		{20, 0, 6, (*Server).handleDeleteTopics},
		{21, 0, 2, (*Server).handleDeleteRecords},
		{22, 0, 5, (*Server).handleInitProducerID},
		{23, 0, 4, (*Server).handleOffsetForLeaderEpoch},
		{32, 0, 4, (*Server).handleDescribeConfigs},
		{33, 0, 2, (*Server).handleAlterConfigs},
		{37, 0, 3, (*Server).handleCreatePartitions},
		{42, 0, 2, (*Server).handleDeleteGroups},
		{44, 0, 1, (*Server).handleIncrementalAlterConfigs},
		{47, 0, 0, (*Server).handleOffsetDelete},
		{60, 0, 1, (*Server).handleDescribeCluster},
		{61, 0, 0, (*Server).handleDescribeProducers},
	}
	m := make(map[int16]*api, len(apis))
	for i := range apis {
		a := &apis[i]
		if a.max > kmsg.RequestForKey(a.key).MaxVersion() {
			panic("kafka: apis table serves a version kmsg cannot encode: " + kmsg.NameForKey(a.key))
		}
		m[a.key] = a
	}
	apiByKey = m
}

func lookupAPI(key int16) *api { return apiByKey[key] }

func inRange(key, version int16) bool {
	a := lookupAPI(key)
	return a != nil && version >= a.min && version <= a.max
}
