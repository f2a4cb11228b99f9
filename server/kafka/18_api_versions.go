package kafka

// ApiVersions (key 18), versions 0–4 (v4 is v3 with KAFKA-17011 fixed:
// a feature's MinVersion may be 0; ferry advertises no features).
//
// Advertises exactly the apis table. The response header is always v0
// (no tagged fields), even for v3+, as Kafka does, so clients can parse it
// before they know what the broker speaks. A request for a version above 4
// gets a v0 answer with UNSUPPORTED_VERSION and the ranges, so the client
// retries with a version this broker serves. No features are advertised
// (in particular no transaction.version), and no KIP-848 or telemetry APIs.
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
	return resp
}

func (s *Server) apiKeys() []kmsg.ApiVersionsResponseApiKey {
	keys := make([]kmsg.ApiVersionsResponseApiKey, 0, len(apis))
	for i := range apis {
		a := &apis[i]
		if !s.serves(a) {
			continue
		}
		keys = append(keys, kmsg.ApiVersionsResponseApiKey{ApiKey: a.key, MinVersion: a.min, MaxVersion: a.max})
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
