package kafka

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/test/harness"
)

func consumerJoin(group, memberID string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.MemberID, req.ProtocolType = group, memberID, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 10000
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = []string{"t"}
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", meta.AppendTo(nil)
	req.Protocols = append(req.Protocols, p)
	return req
}

// Kafka names a member "<client.id>-<uuid>" (client-side assignors such as
// librdkafka's roundrobin order members by it) and DescribeGroups reports
// each member's client id and host.
func TestJoinGroupMemberIDAndDescribeCarryClient(t *testing.T) {
	ts := newTestServer(t)
	joiner := ts.dial(t) // client id "test"
	first := do[*kmsg.JoinGroupResponse](joiner, consumerJoin("g", ""), 5)
	if first.ErrorCode != kerr.MemberIDRequired.Code || !strings.HasPrefix(first.MemberID, "test-") {
		t.Fatalf("first join: code %d member id %q, want MEMBER_ID_REQUIRED and an id starting with \"test-\"",
			first.ErrorCode, first.MemberID)
	}
	// The second join waits out the initial rebalance delay; the member is
	// already in the group, so describe it meanwhile from another connection.
	req := consumerJoin("g", first.MemberID)
	req.SetVersion(5)
	joiner.send(req)
	admin := ts.dial(t)
	var members []kmsg.DescribeGroupsResponseGroupMember
	harness.WaitFor(t, "the joining member to show in DescribeGroups", 10*time.Second, func() bool {
		dr := kmsg.NewPtrDescribeGroupsRequest()
		dr.Groups = []string{"g"}
		members = do[*kmsg.DescribeGroupsResponse](admin, dr, 5).Groups[0].Members
		return len(members) == 1
	})
	if m := members[0]; m.MemberID != first.MemberID || m.ClientID != "test" || m.ClientHost != "/127.0.0.1" {
		t.Fatalf("member %q client id %q host %q, want %q, \"test\", \"/127.0.0.1\"",
			m.MemberID, m.ClientID, m.ClientHost, first.MemberID)
	}
}

// A connection's requests run in a context kept while the client id stays
// the same: a client that changes its id on the same connection is seen
// under the new one from its next request.
func TestClientIDChangeOnOneConnection(t *testing.T) {
	ts := newTestServer(t)
	c := ts.dial(t) // client id "test"
	for _, id := range []string{"test", "renamed", "test"} {
		c.f = kmsg.NewRequestFormatter(kmsg.FormatterClientID(id))
		resp := do[*kmsg.JoinGroupResponse](c, consumerJoin("g-"+id, ""), 5)
		if resp.ErrorCode != kerr.MemberIDRequired.Code || !strings.HasPrefix(resp.MemberID, id+"-") {
			t.Fatalf("join as %q: code %d member id %q, want MEMBER_ID_REQUIRED and an id starting with %q",
				id, resp.ErrorCode, resp.MemberID, id+"-")
		}
	}
}
