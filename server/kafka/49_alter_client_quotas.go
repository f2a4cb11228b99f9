package kafka

// AlterClientQuotas (key 49), versions 0–1 (KIP-546).
//
// Changes each entity's quotas, all of an entity's ops or none, in the
// store (ZooKeeper's /config/users, /config/clients and /config/ips,
// announced to every broker; the data dir on a single node). An entity or
// op Kafka refuses (an unknown or repeated entity type, an ip with a user
// or client id, an ip name that is not an IP address, a key the entity's
// kind does not hold, a byte rate that is not a positive whole number, a
// connection_creation_rate that is not a whole number from 0, a key
// changed twice) is INVALID_REQUEST for that entity; validate_only checks
// without writing. An ip entity (KIP-612) holds connection_creation_rate
// only, enforced at accept (connrate.go). Deviation: an ip name must be an
// address (Kafka's ZooKeeper mode also took a resolvable host name), and
// is stored in its canonical spelling (2001:DB8:0::1 as 2001:db8::1).

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/auth"
	"github.com/ferry-mq/ferry/server/quota"
)

// ACLs: ALTER_CONFIGS on the cluster, as Kafka's; without it every entry
// is answered CLUSTER_AUTHORIZATION_FAILED and nothing changes.
func (s *Server) handleAlterClientQuotas(ctx context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.AlterClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	allowed := s.authorizedCluster(ctx, auth.OpAlterConfigs)
	for _, in := range req.Entries {
		out := kmsg.NewAlterClientQuotasResponseEntry()
		cs := make([]quota.Component, 0, len(in.Entity))
		for _, c := range in.Entity {
			cs = append(cs, quota.Component{Type: c.Type, Name: c.Name})
			out.Entity = append(out.Entity, kmsg.AlterClientQuotasResponseEntryEntity{Type: c.Type, Name: c.Name})
		}
		if !allowed {
			out.ErrorCode = codeClusterAuthFailed
			out.ErrorMessage = kmsg.StringPtr("ALTER_CONFIGS on the cluster is needed to change client quotas")
		} else if err := s.alterClientQuota(cs, in.Ops, req.ValidateOnly); err != nil {
			out.ErrorCode, out.ErrorMessage = alterClientQuotaCode(err), kmsg.StringPtr(err.Error())
		}
		resp.Entries = append(resp.Entries, out)
	}
	return resp
}

func (s *Server) alterClientQuota(cs []quota.Component, kops []kmsg.AlterClientQuotasRequestEntryOp, validateOnly bool) error {
	e, err := quota.EntityOf(cs)
	if err != nil {
		return err
	}
	ops := make([]quota.Op, 0, len(kops))
	for _, o := range kops {
		ops = append(ops, quota.Op{Key: o.Key, Value: o.Value, Remove: o.Remove})
	}
	if s.cfg.QuotaStore == nil {
		if _, err := quota.Apply(e, nil, ops); err != nil {
			return err
		}
		return errNoQuotaStore
	}
	return s.cfg.Quotas.Alter(s.cfg.QuotaStore, e, ops, validateOnly)
}

var errNoQuotaStore = errors.New("this broker has no quota store")

func alterClientQuotaCode(err error) int16 {
	if errors.Is(err, quota.ErrInvalidEntity) || errors.Is(err, quota.ErrInvalidQuota) {
		return kerr.InvalidRequest.Code
	}
	return kerr.UnknownServerError.Code
}
