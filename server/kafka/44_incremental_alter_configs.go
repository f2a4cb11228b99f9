package kafka

// IncrementalAlterConfigs (key 44), versions 0–1.
//
// SET, DELETE, APPEND and SUBTRACT on topic configs, applied together per
// resource (all or nothing) by Broker.ChangeTopicConfigs. APPEND and
// SUBTRACT take comma-separated items and work on LIST configs
// (cleanup.policy, the throttled-replica lists), from the override or the
// default; on other configs they are INVALID_CONFIG, as in Kafka. A config
// named twice in one resource is INVALID_REQUEST. ValidateOnly checks
// without changing. Broker resources change the dynamic broker configs
// (KIP-226's that ferry has: the replication throttle rates, the log
// defaults log.retention.*, log.segment.bytes, log.roll.*, log.flush.*,
// log.index.interval.bytes, min.insync.replicas, and the cleaner's
// threads, backoff and compaction defaults; SET and DELETE) of the broker named,
// which must be this one, or of every broker (name ""); a cluster keeps
// them in ZooKeeper. Other broker settings are static: INVALID_CONFIG.
//
// ACLs: ALTER_CONFIGS on the topic, or on the cluster for a broker.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/auth"
)

func (s *Server) handleIncrementalAlterConfigs(ctx context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	for _, r := range req.Resources {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		if code := s.configDenied(ctx, auth.OpAlterConfigs, r.ResourceType, r.ResourceName); code != 0 {
			rr.ErrorCode = code
			resp.Resources = append(resp.Resources, rr)
			continue
		}
		ops, err := incrementalOps(r)
		var code int16
		switch {
		case err != nil:
			code = codeInvalidRequest
		case r.ResourceType == kmsg.ConfigResourceTypeBroker:
			err = s.broker.ChangeBrokerConfigs(r.ResourceName, ops, req.ValidateOnly)
			code = errorCode(err)
		default:
			err = s.broker.ChangeTopicConfigs(r.ResourceName, ops, false, req.ValidateOnly)
			code = errorCode(err)
		}
		rr.ErrorCode, rr.ErrorMessage = code, errorMessage(err)
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

func incrementalOps(r kmsg.IncrementalAlterConfigsRequestResource) ([]server.ConfigOp, error) {
	if err := alterableResource(r.ResourceType); err != nil {
		return nil, err
	}
	ops := make([]server.ConfigOp, 0, len(r.Configs))
	seen := make(map[string]bool, len(r.Configs))
	for _, c := range r.Configs {
		if seen[c.Name] {
			return nil, fmt.Errorf("config %q appears more than once", c.Name)
		}
		seen[c.Name] = true
		op := server.ConfigOp{Name: c.Name}
		switch c.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			op.Op = server.ConfigSet
		case kmsg.IncrementalAlterConfigOpDelete:
			op.Op = server.ConfigDelete
		case kmsg.IncrementalAlterConfigOpAppend:
			op.Op = server.ConfigAppend
		case kmsg.IncrementalAlterConfigOpSubtract:
			op.Op = server.ConfigSubtract
		default:
			return nil, fmt.Errorf("operation %d on %q is not SET, DELETE, APPEND or SUBTRACT", c.Op, c.Name)
		}
		if c.Value == nil && op.Op != server.ConfigDelete {
			return nil, fmt.Errorf("%v %q with a null value", c.Op, c.Name)
		}
		if c.Value != nil {
			op.Value = *c.Value
		}
		ops = append(ops, op)
	}
	return ops, nil
}
