package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// On a single node the broker resource describes the throttle rates at
// their default and refuses to change them (they need a cluster's
// ZooKeeper); a static broker setting or a bad value is INVALID_CONFIG on
// any broker; another broker's id is INVALID_REQUEST.
func TestBrokerConfigChangesAreRefusedWithKafkasCodes(t *testing.T) {
	ts := newTestServer(t)
	c := ts.dial(t)
	alter := func(name, key, value string) kmsg.IncrementalAlterConfigsResponseResource {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: name,
			Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: key, Op: kmsg.IncrementalAlterConfigOpSet, Value: &value}}}}
		return do[*kmsg.IncrementalAlterConfigsResponse](c, req, 1).Resources[0]
	}
	for _, tc := range []struct {
		name, key, value string
		code             int16
	}{
		{"0", "leader.replication.throttled.rate", "1048576", kerr.InvalidRequest.Code},
		{"", "follower.replication.throttled.rate", "1048576", kerr.InvalidRequest.Code},
		{"0", "log.retention.ms", "1000", kerr.InvalidRequest.Code},
		{"0", "log.dirs", "/tmp", kerr.InvalidConfig.Code},
		{"0", "log.cleaner.threads", "0", kerr.InvalidConfig.Code},
		{"0", "leader.replication.throttled.rate", "-5", kerr.InvalidConfig.Code},
		{"0", "leader.replication.throttled.rate", "fast", kerr.InvalidConfig.Code},
		{"7", "leader.replication.throttled.rate", "1", kerr.InvalidRequest.Code},
	} {
		r := alter(tc.name, tc.key, tc.value)
		if r.ErrorCode != tc.code || r.ErrorMessage == nil || *r.ErrorMessage == "" {
			t.Errorf("broker %q %s=%s: code %d %v, want %d with a message", tc.name, tc.key, tc.value, r.ErrorCode, r.ErrorMessage, tc.code)
		}
	}
	dc := kmsg.NewPtrDescribeConfigsRequest()
	dc.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "0"}}
	d := do[*kmsg.DescribeConfigsResponse](c, dc, 4)
	seen := 0
	for _, cfg := range d.Resources[0].Configs {
		if cfg.Name == "leader.replication.throttled.rate" || cfg.Name == "follower.replication.throttled.rate" {
			seen++
			if *cfg.Value != "9223372036854775807" || cfg.Source != kmsg.ConfigSourceDefaultConfig || cfg.ReadOnly {
				t.Errorf("%s: %s source %d read-only %v; want the unlimited default, alterable", cfg.Name, *cfg.Value, cfg.Source, cfg.ReadOnly)
			}
		}
	}
	if seen != 2 {
		t.Fatalf("the broker describes %d of the 2 throttle rates", seen)
	}
}
