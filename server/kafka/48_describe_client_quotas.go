package kafka

// DescribeClientQuotas (key 48), versions 0–1 (KIP-546).
//
// Lists the user, client-id, user+client-id and ip entities the filter
// selects with their quotas, from this broker's copy (kept current from
// the store). A filter Kafka refuses (an unknown or repeated entity type,
// an unknown match type, an exact match without a name, ip with user or
// client-id, an exact ip that is not an IP address) fails the whole
// request with INVALID_REQUEST. An exact ip matches however the address
// is spelled (::ffff:127.0.0.1 is 127.0.0.1); ip entities are listed by
// the address's canonical spelling.

import (
	"context"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/auth"
	"github.com/ferry-mq/ferry/server/quota"
)

// ACLs: DESCRIBE_CONFIGS on the cluster, as Kafka's.
func (s *Server) handleDescribeClientQuotas(ctx context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.DescribeClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	if !s.authorizedCluster(ctx, auth.OpDescribeConfigs) {
		resp.ErrorCode = codeClusterAuthFailed
		resp.ErrorMessage = kmsg.StringPtr("DESCRIBE_CONFIGS on the cluster is needed to describe client quotas")
		return resp
	}
	f := quota.Filter{Strict: req.Strict}
	for _, c := range req.Components {
		fc := quota.FilterComponent{Type: c.EntityType, Match: quota.Match(c.MatchType)}
		if fc.Match == quota.MatchExact {
			if c.Match == nil {
				resp.ErrorCode = kerr.InvalidRequest.Code
				resp.ErrorMessage = kmsg.StringPtr("an exact match of entity type " + c.EntityType + " needs a name")
				return resp
			}
			fc.Name = *c.Match
		}
		f.Components = append(f.Components, fc)
	}
	if err := f.Validate(); err != nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(err.Error())
		return resp
	}
	for _, e := range s.cfg.Quotas.Select(f) {
		entry := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, c := range e.Entity.Components() {
			entry.Entity = append(entry.Entity, kmsg.DescribeClientQuotasResponseEntryEntity{Type: c.Type, Name: c.Name})
		}
		for _, k := range slices.Sorted(maps.Keys(e.Quotas)) {
			entry.Values = append(entry.Values, kmsg.DescribeClientQuotasResponseEntryValue{Key: k, Value: e.Quotas[k]})
		}
		resp.Entries = append(resp.Entries, entry)
	}
	return resp
}
