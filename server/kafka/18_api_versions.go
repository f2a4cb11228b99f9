package kafka

// ApiVersions (key 18), versions 0–4 (v4 is v3 with KAFKA-17011 fixed:
// a feature's MinVersion may be 0; ferry advertises no features).
//
// Advertises exactly the apis table. The response header is always v0
// (no tagged fields), even for v3+, as Kafka does, so clients can parse it
// before they know what the broker speaks. A request for a version above 4
// gets a v0 answer with UNSUPPORTED_VERSION and the ranges, so the client
// retries with a version this broker serves. No features are advertised
// unless transaction.version is 2 (txn.Config.TransactionVersion): then v3+
// advertise the feature transaction.version, supported 0–2 (1–2 to v3,
// whose Java and librdkafka readers refuse a minimum of 0, KAFKA-17011)
// and finalized at level 2, which is what makes franz-go and the Java
// client (4.0+) use KIP-890 part 2. No KIP-848 or telemetry APIs.
// Kafka checks the v3 ClientSoftwareName/Version format; ferry does not.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (s *Server) handleApiVersions(_ context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.ApiVersionsRequest)
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	resp.ApiKeys = s.apiKeys()
	if tv := s.transactionVersion(); tv >= 2 && req.Version >= 3 {
		minTV := int16(0)
		if req.Version == 3 {
			minTV = 1
		}
		resp.SupportedFeatures = []kmsg.ApiVersionsResponseSupportedFeature{{Name: "transaction.version", MinVersion: minTV, MaxVersion: 2}}
		// The level never changes while the broker runs: epoch 1.
		resp.FinalizedFeaturesEpoch = 1
		resp.FinalizedFeatures = []kmsg.ApiVersionsResponseFinalizedFeature{{Name: "transaction.version", MinVersionLevel: tv, MaxVersionLevel: tv}}
	}
	return resp
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
// version outside 0–4.
func (s *Server) unsupportedAPIVersions() kmsg.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	resp.ApiKeys = s.apiKeys()
	return resp
}
