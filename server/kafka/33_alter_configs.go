package kafka

// AlterConfigs (key 33), versions 0–2.
//
// Replaces a topic's whole override set (configs not listed return to the
// broker default), as Kafka's legacy AlterConfigs does. A null value is
// INVALID_REQUEST; unknown keys and bad values are INVALID_CONFIG.
// ValidateOnly checks without changing anything. A broker resource
// replaces the dynamic broker configs (server.DynamicBrokerConfigNames:
// the replication throttle rates, the log defaults, the cleaner's) as
// IncrementalAlterConfigs sets them; the other broker settings are static
// (flags, env, server.properties).
//
// ACLs: ALTER_CONFIGS on the topic, or on the cluster for a broker.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/auth"
)

func (s *Server) handleAlterConfigs(ctx context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	for _, r := range req.Resources {
		rr := kmsg.NewAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		if code := s.configDenied(ctx, auth.OpAlterConfigs, r.ResourceType, r.ResourceName); code != 0 {
			rr.ErrorCode = code
			resp.Resources = append(resp.Resources, rr)
			continue
		}
		set := make(map[string]string, len(r.Configs))
		var code int16
		err := alterableResource(r.ResourceType)
		for _, c := range r.Configs {
			if c.Value == nil && err == nil {
				err = fmt.Errorf("config %q has a null value", c.Name)
			} else if c.Value != nil {
				set[c.Name] = *c.Value
			}
		}
		switch {
		case err != nil:
			code = codeInvalidRequest
		case r.ResourceType == kmsg.ConfigResourceTypeBroker:
			err = s.broker.ChangeBrokerConfigs(r.ResourceName, replaceBrokerConfigs(set), req.ValidateOnly)
			code = errorCode(err)
		default:
			err = s.alterTopicConfigs(r.ResourceName, set, nil, true, req.ValidateOnly)
			code = errorCode(err)
		}
		rr.ErrorCode, rr.ErrorMessage = code, errorMessage(err)
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

func alterableResource(typ kmsg.ConfigResourceType) error {
	if typ == kmsg.ConfigResourceTypeTopic || typ == kmsg.ConfigResourceTypeBroker {
		return nil
	}
	return fmt.Errorf("resource type %d cannot be altered; ferry alters topic (2) and broker (4) configs", typ)
}

// replaceBrokerConfigs turns a whole new set into ops: the dynamic
// configs not named return to their defaults.
func replaceBrokerConfigs(set map[string]string) []server.ConfigOp {
	var ops []server.ConfigOp
	for k, v := range set {
		ops = append(ops, server.ConfigOp{Name: k, Op: server.ConfigSet, Value: v})
	}
	for _, k := range server.DynamicBrokerConfigNames() {
		if _, ok := set[k]; !ok {
			ops = append(ops, server.ConfigOp{Name: k, Op: server.ConfigDelete})
		}
	}
	return ops
}

// alterTopicConfigs applies (or with validateOnly, checks) a change.
func (s *Server) alterTopicConfigs(topic string, set map[string]string, remove []string, replace, validateOnly bool) error {
	ops := make([]server.ConfigOp, 0, len(set)+len(remove))
	for k, v := range set {
		ops = append(ops, server.ConfigOp{Name: k, Op: server.ConfigSet, Value: v})
	}
	for _, k := range remove {
		ops = append(ops, server.ConfigOp{Name: k, Op: server.ConfigDelete})
	}
	return s.broker.ChangeTopicConfigs(topic, ops, replace, validateOnly)
}
