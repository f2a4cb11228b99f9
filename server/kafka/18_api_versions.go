package kafka

// ApiVersions (key 18), versions 0–5 (v4 is v3 with KAFKA-17011 fixed:
// a feature's MinVersion may be 0; v5 is KIP-1242's, below).
//
// Advertises exactly the apis table. The response header is always v0
// (no tagged fields), even for v3+, as Kafka does, so clients can parse it
// before they know what the broker speaks. A request for a version above 5
// gets a v0 answer with UNSUPPORTED_VERSION and ApiVersions' own range
// alone (KIP-511), so the client retries at a version this broker serves
// and learns the features from that answer. With a transaction
// coordinator, v3+ advertise the feature transaction.version (KIP-584):
// this broker's supported range (from 1 to v3, whose Java and librdkafka
// readers refuse a minimum of 0, KAFKA-17011), and the cluster's
// finalized level and its epoch (server/features); a finalized level of
// 2 is what makes franz-go and the Java client (4.0+) use KIP-890 part 2
// (Produce v12, EndTxn v5 and TxnOffsetCommit v5 are advertised at every
// level, as Kafka 4 does: apis.go's maxVersion). No KIP-848 or telemetry APIs. Kafka checks the v3
// ClientSoftwareName/Version format; ferry does not.
//
// KIP-1242 (v5): a client that knows the cluster names the cluster id and
// the node id it means to reach. A connection that reached another broker
// (an address a restarted pod or a moved broker now holds) or another
// cluster gets REBOOTSTRAP_REQUIRED and no ranges: the client drops its
// brokers and asks its bootstrap servers again, instead of sending that
// broker requests meant for another. One of the two without the other is
// INVALID_REQUEST. franz-go 1.22 opens every connection at v5, so serving
// it also spares each connection the downgrade's round trip.

import (
	"context"
	"github.com/ferry-mq/ferry/server/features"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (s *Server) handleApiVersions(_ context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.ApiVersionsRequest)
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	if code := s.checkExpectedBroker(req); code != 0 {
		resp.ErrorCode = code
		return resp
	}
	resp.ApiKeys = s.apiKeys()
	if s.cfg.Txns != nil && req.Version >= 3 {
		s.advertiseFeatures(resp)
	}
	return resp
}

// checkExpectedBroker is KIP-1242's check of the cluster and node a v5
// client expected to reach (NodeID -1 and no ClusterID: it names none).
func (s *Server) checkExpectedBroker(req *kmsg.ApiVersionsRequest) int16 {
	if req.Version < 5 || req.ClusterID == nil && req.NodeID == -1 {
		return 0
	}
	if req.ClusterID == nil || req.NodeID == -1 {
		return kerr.InvalidRequest.Code
	}
	if *req.ClusterID != s.broker.ClusterID() || req.NodeID != s.broker.BrokerID() {
		return kerr.RebootstrapRequired.Code
	}
	return 0
}

// advertiseFeatures fills the supported and finalized features.
func (s *Server) advertiseFeatures(resp *kmsg.ApiVersionsResponse) {
	supported := s.cfg.Features.Supported()[features.TransactionVersion]
	if resp.Version == 3 {
		supported.Min = max(supported.Min, 1)
	}
	resp.SupportedFeatures = []kmsg.ApiVersionsResponseSupportedFeature{{Name: features.TransactionVersion, MinVersion: supported.Min, MaxVersion: supported.Max}}
	finalized := s.cfg.Features.Finalized()
	resp.FinalizedFeaturesEpoch = finalized.Epoch
	if level := finalized.Level(features.TransactionVersion); level > 0 {
		resp.FinalizedFeatures = []kmsg.ApiVersionsResponseFinalizedFeature{{Name: features.TransactionVersion, MinVersionLevel: level, MaxVersionLevel: level}}
	}
}

func (s *Server) apiKeys() []kmsg.ApiVersionsResponseApiKey {
	keys := make([]kmsg.ApiVersionsResponseApiKey, 0, len(apis))
	for i := range apis {
		a := &apis[i]
		if !s.serves(a) {
			continue
		}
		keys = append(keys, kmsg.ApiVersionsResponseApiKey{ApiKey: a.key, MinVersion: a.min, MaxVersion: s.maxVersion(a)})
	}
	return keys
}

// unsupportedAPIVersions is the v0 answer to an ApiVersions request of a
// version above 5: ApiVersions' range alone, as Kafka answers since
// 2.4. A v0 body cannot hold the features, and a client given every range
// there may take them as its answer: franz-go 1.22, whose first request
// is v5, did while this broker served 0–4, and never saw
// transaction.version 2 on that connection.
func (s *Server) unsupportedAPIVersions() kmsg.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	a := lookupAPI(apiVersionsKey)
	resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{ApiKey: apiVersionsKey, MinVersion: a.min, MaxVersion: a.max}}
	return resp
}
