package kafka

// UpdateFeatures (key 57), versions 0–1 (v1 adds ValidateOnly and the
// upgrade type; v0's AllowDowngrade reads as a safe downgrade). Changes
// the cluster's finalized features (KIP-584) with Kafka 3.9's rules
// (server/features.Decide): every update valid or none applied, each
// feature's result its INVALID_UPDATE_VERSION message. Kafka sends it to
// the controller; any ferry broker serves it, since the write to /feature
// is conditional on the epoch it read (a concurrent change is decided
// again on what it wrote), so there is no NOT_CONTROLLER to answer. The
// answer comes once the new levels are stored; the other brokers adopt
// them from their ZooKeeper watch moments later.
//
// ACLs: ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/auth"
	"github.com/ferry-mq/ferry/server/features"
)

func (s *Server) handleUpdateFeatures(ctx context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.UpdateFeaturesRequest)
	resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	fail := func(code int16, msg string) kmsg.Response {
		resp.ErrorCode, resp.ErrorMessage = code, &msg
		for _, u := range req.FeatureUpdates {
			resp.Results = append(resp.Results, kmsg.UpdateFeaturesResponseResult{Feature: u.Feature, ErrorCode: code, ErrorMessage: &msg})
		}
		return resp
	}
	if !s.authorizedCluster(ctx, auth.OpAlter) {
		return fail(codeClusterAuthFailed, kerr.ClusterAuthorizationFailed.Message)
	}
	updates := make([]features.Update, 0, len(req.FeatureUpdates))
	for _, u := range req.FeatureUpdates {
		typ := features.UpgradeType(u.UpgradeType)
		if req.Version == 0 {
			typ = features.Upgrade
			if u.AllowDowngrade {
				typ = features.SafeDowngrade
			}
		}
		updates = append(updates, features.Update{Name: u.Feature, Level: u.MaxVersionLevel, Type: typ})
	}
	results, err := s.cfg.Features.Update(updates, req.ValidateOnly)
	if err != nil {
		s.logger.Warn("update features", "err", err)
		return fail(kerr.UnknownServerError.Code, "the finalized features could not be stored: "+err.Error())
	}
	for _, r := range results {
		res := kmsg.UpdateFeaturesResponseResult{Feature: r.Name, ErrorCode: r.Code}
		if r.Message != "" {
			res.ErrorMessage = &r.Message
		}
		resp.Results = append(resp.Results, res)
	}
	return resp
}
