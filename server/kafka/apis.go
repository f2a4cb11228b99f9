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
	// interBroker: the controller's orders, served only by a cluster's
	// broker (Config.InterBroker).
	interBroker bool
}

const (
	produceKey     = 0
	fetchKey       = 1
	apiVersionsKey = 18
	// offsetForLeaderEpochKey: a follower's is exempt from request quotas.
	offsetForLeaderEpochKey = 23
)

// apis is the one table of what this listener serves; ApiVersions
// advertises exactly these ranges (with the KIP-890 part 2 versions,
// tv2Versions, when a transaction coordinator runs), and a request outside
// them closes the connection (ApiVersions excepted, which Kafka always
// answers).
//
// Every API starts at the first version Kafka 3.9 serves (v0 for all of
// these): Kafka 4.0 dropped the older ones (KIP-896), but tools still in
// use send them (Burrow's ListOffsets v0, pre-0.11 clients' Fetch and
// Produce with the old message formats).
//
// The transaction APIs (24–26, 28, 65, 66) are served only with a
// transaction coordinator (Config.Txns); WriteTxnMarkers (27) is the
// partition side's. Not served: KIP-848 and share groups, telemetry, controller
// and inter-broker APIs. Each range also ends at Kafka 3.9's newest version.
var apis []api

// apiByKey indexes apis by key.
var apiByKey map[int16]*api

func init() { // a var initializer would be a cycle: ApiVersions reads apis
	apis = []api{
		{0, 0, 11, (*Server).serveProduceWithQuota, false},
		{1, 0, 17, (*Server).serveFetchWithQuota, false},
		{2, 0, 9, (*Server).handleListOffsets, false},
		{3, 0, 12, (*Server).handleMetadata, false},
		{4, 0, 5, (*Server).handleLeaderAndIsr, true},
		{5, 0, 3, (*Server).handleStopReplica, true},
		{6, 0, 7, (*Server).handleUpdateMetadata, true},
		{7, 1, 3, (*Server).handleControlledShutdown, true},
		{8, 0, 9, (*Server).handleOffsetCommit, false},
		{9, 0, 9, (*Server).handleOffsetFetch, false},
		{10, 0, 5, (*Server).handleFindCoordinator, false},
		{11, 0, 9, (*Server).handleJoinGroup, false},
		{12, 0, 4, (*Server).handleHeartbeat, false},
		{13, 0, 5, (*Server).handleLeaveGroup, false},
		{14, 0, 5, (*Server).handleSyncGroup, false},
		{15, 0, 5, (*Server).handleDescribeGroups, false},
		{16, 0, 5, (*Server).handleListGroups, false},
		{17, 0, 1, (*Server).handleSaslHandshake, false},
		{18, 0, 5, (*Server).handleApiVersions, false},
		{19, 0, 7, (*Server).handleCreateTopics, false},
		{20, 0, 6, (*Server).handleDeleteTopics, false},
		{21, 0, 2, (*Server).handleDeleteRecords, false},
		{22, 0, 5, (*Server).handleInitProducerID, false},
		{23, 0, 4, (*Server).handleOffsetForLeaderEpoch, false},
		{24, 0, 5, (*Server).handleAddPartitionsToTxn, false},
		{25, 0, 4, (*Server).handleAddOffsetsToTxn, false},
		{26, 0, 4, (*Server).handleEndTxn, false},
		{27, 0, 1, (*Server).handleWriteTxnMarkers, false},
		{28, 0, 4, (*Server).handleTxnOffsetCommit, false},
		{29, 0, 3, (*Server).handleDescribeACLs, false},
		{30, 0, 3, (*Server).handleCreateACLs, false},
		{31, 0, 3, (*Server).handleDeleteACLs, false},
		{32, 0, 4, (*Server).handleDescribeConfigs, false},
		{33, 0, 2, (*Server).handleAlterConfigs, false},
		{35, 0, 4, (*Server).handleDescribeLogDirs, false},
		{36, 0, 2, (*Server).handleSaslAuthenticate, false},
		{37, 0, 3, (*Server).handleCreatePartitions, false},
		{42, 0, 2, (*Server).handleDeleteGroups, false},
		{43, 0, 2, (*Server).handleElectLeaders, false},
		{44, 0, 1, (*Server).handleIncrementalAlterConfigs, false},
		{45, 0, 0, (*Server).handleAlterPartitionReassignments, false},
		{46, 0, 0, (*Server).handleListPartitionReassignments, false},
		{47, 0, 0, (*Server).handleOffsetDelete, false},
		{48, 0, 1, (*Server).handleDescribeClientQuotas, false},
		{49, 0, 1, (*Server).handleAlterClientQuotas, false},
		{50, 0, 0, (*Server).handleDescribeUserScramCredentials, false},
		{51, 0, 0, (*Server).handleAlterUserScramCredentials, false},
		{60, 0, 1, (*Server).handleDescribeCluster, false},
		{61, 0, 0, (*Server).handleDescribeProducers, false},
		{57, 0, 1, (*Server).handleUpdateFeatures, false},
		{65, 0, 0, (*Server).handleDescribeTransactions, false},
		{66, 0, 1, (*Server).handleListTransactions, false},
	}
	m := make(map[int16]*api, len(apis))
	for i := range apis {
		a := &apis[i]
		if max(a.max, tv2Versions[a.key]) > kmsg.RequestForKey(a.key).MaxVersion() {
			panic("kafka: apis table serves a version kmsg cannot encode: " + kmsg.NameForKey(a.key))
		}
		m[a.key] = a
	}
	apiByKey = m
}

func lookupAPI(key int16) *api { return apiByKey[key] }

// serves reports whether this listener serves a: inter-broker APIs only on
// a cluster's broker.
func (s *Server) serves(a *api) bool {
	return a != nil && (!a.interBroker || s.cfg.InterBroker) && (!txnAPIs[a.key] || s.cfg.Txns != nil)
}

// maxVersion is the newest version of a advertised here: with a
// transaction coordinator, Produce v12, EndTxn v5 and TxnOffsetCommit v5
// (KIP-890 part 2) whatever the finalized transaction.version, as Kafka
// 4 advertises them; a client opts in by the finalized feature, not by
// the versions (franz-go, the Java client), and one that opted in keeps
// its transaction's protocol on the connections it opens after a
// downgrade, which a cap at Produce v11 there would break mid-transaction
// (the produce would neither add the partition nor find it added).
func (s *Server) maxVersion(a *api) int16 {
	if s.cfg.Txns != nil {
		return servedMax(a)
	}
	return a.max
}

// servedMax is the newest version of a this listener decodes.
func servedMax(a *api) int16 {
	if v, ok := tv2Versions[a.key]; ok {
		return v
	}
	return a.max
}

var tv2Versions = map[int16]int16{0: 12, 26: 5, 28: 5}

// txnAPIs are served only with a transaction coordinator.
var txnAPIs = map[int16]bool{24: true, 25: true, 26: true, 28: true, 65: true, 66: true}

func inRange(key, version int16) bool {
	a := lookupAPI(key)
	return a != nil && version >= a.min && version <= a.max
}
