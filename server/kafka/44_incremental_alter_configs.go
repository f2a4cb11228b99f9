package kafka

// IncrementalAlterConfigs (key 44), versions 0–1.
//
// SET and DELETE on topic configs, applied together per resource (all or
// nothing); APPEND and SUBTRACT are INVALID_REQUEST (ferry has no list
// configs that take them usefully). ValidateOnly checks without changing.
// Broker resources are refused with INVALID_REQUEST (static settings).

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (s *Server) handleIncrementalAlterConfigs(_ context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	for _, r := range req.Resources {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		set, remove, err := incrementalChange(r)
		var code int16
		if err != nil {
			code = codeInvalidRequest
		} else {
			err = s.alterTopicConfigs(r.ResourceName, set, remove, false, req.ValidateOnly)
			code = errorCode(err)
		}
		rr.ErrorCode, rr.ErrorMessage = code, errorMessage(err)
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

func incrementalChange(r kmsg.IncrementalAlterConfigsRequestResource) (map[string]string, []string, error) {
	if err := alterableResource(r.ResourceType); err != nil {
		return nil, nil, err
	}
	set := map[string]string{}
	var remove []string
	for _, c := range r.Configs {
		switch c.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			if c.Value == nil {
				return nil, nil, fmt.Errorf("SET %q with a null value", c.Name)
			}
			set[c.Name] = *c.Value
		case kmsg.IncrementalAlterConfigOpDelete:
			remove = append(remove, c.Name)
		default:
			return nil, nil, fmt.Errorf("operation %v on %q is not supported; use SET or DELETE", c.Op, c.Name)
		}
	}
	return set, remove, nil
}
