package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/acl"
	"github.com/ferry-mq/ferry/server/auth"
	"github.com/ferry-mq/ferry/server/records"
)

// aclServer is a listener with ferry's authorizer and in-memory bindings;
// its clients are User:ANONYMOUS (a PLAINTEXT listener).
func aclServer(t *testing.T, cfg acl.Config, bindings ...acl.Binding) (*testServer, *acl.Manager) {
	t.Helper()
	m := acl.NewManager(acl.New(cfg), &acl.MemoryStore{})
	for _, err := range m.Create(bindings) {
		if err != nil {
			t.Fatal(err)
		}
	}
	ts := newTestServer(t, func(c *Config) { c.ACLs = m })
	return ts, m
}

func allowAnon(typ auth.ResourceType, name string, pt auth.PatternType, op auth.Operation) acl.Binding {
	return acl.Binding{Pattern: acl.Pattern{Type: typ, Name: name, PatternType: pt},
		Entry: acl.Entry{Principal: auth.Anonymous, Host: "*", Operation: op, Permission: auth.Allow}}
}

func denyAnon(typ auth.ResourceType, name string, pt auth.PatternType, op auth.Operation) acl.Binding {
	b := allowAnon(typ, name, pt, op)
	b.Entry.Permission = auth.Deny
	return b
}

func TestACLAPIsWithoutAuthorizerAnswerSecurityDisabled(t *testing.T) {
	c := newTestServer(t).dial(t)
	want := kerr.SecurityDisabled.Code
	d := kmsg.NewPtrDescribeACLsRequest()
	d.ResourceType, d.ResourcePatternType, d.Operation, d.PermissionType = 1, 1, 1, 1
	if r := do[*kmsg.DescribeACLsResponse](c, d, 3); r.ErrorCode != want {
		t.Errorf("DescribeAcls: %d", r.ErrorCode)
	}
	cr := kmsg.NewPtrCreateACLsRequest()
	cr.Creations = []kmsg.CreateACLsRequestCreation{creation("User:a", 2, "t", 3, 3)}
	if r := do[*kmsg.CreateACLsResponse](c, cr, 3); r.Results[0].ErrorCode != want {
		t.Errorf("CreateAcls: %d", r.Results[0].ErrorCode)
	}
	dr := kmsg.NewPtrDeleteACLsRequest()
	dr.Filters = []kmsg.DeleteACLsRequestFilter{{ResourceType: 1, ResourcePatternType: 1, Operation: 1, PermissionType: 1}}
	if r := do[*kmsg.DeleteACLsResponse](c, dr, 3); r.Results[0].ErrorCode != want {
		t.Errorf("DeleteAcls: %d", r.Results[0].ErrorCode)
	}
}

func creation(principal string, typ int8, name string, pattern, op int8) kmsg.CreateACLsRequestCreation {
	c := kmsg.NewCreateACLsRequestCreation()
	c.Principal, c.Host, c.ResourceType, c.ResourceName = principal, "*", kmsg.ACLResourceType(typ), name
	c.ResourcePatternType, c.Operation, c.PermissionType = kmsg.ACLResourcePatternType(pattern), kmsg.ACLOperation(op), 3
	return c
}

func TestACLAPIsNeedClusterPermissions(t *testing.T) {
	ts, _ := aclServer(t, acl.Config{})
	c := ts.dial(t)
	d := kmsg.NewPtrDescribeACLsRequest()
	d.ResourceType, d.ResourcePatternType, d.Operation, d.PermissionType = 1, 1, 1, 1
	if r := do[*kmsg.DescribeACLsResponse](c, d, 3); r.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("DescribeAcls without DESCRIBE on the cluster: %d", r.ErrorCode)
	}
	cr := kmsg.NewPtrCreateACLsRequest()
	cr.Creations = []kmsg.CreateACLsRequestCreation{creation("User:a", 2, "t", 3, 3)}
	if r := do[*kmsg.CreateACLsResponse](c, cr, 3); r.Results[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("CreateAcls without ALTER on the cluster: %d", r.Results[0].ErrorCode)
	}
}

// TestACLAPIsRoundTrip creates, describes and deletes through the wire,
// with Kafka's validation codes.
func TestACLAPIsRoundTrip(t *testing.T) {
	ts, m := aclServer(t, acl.Config{}, allowAnon(auth.ResourceCluster, auth.ClusterName, auth.PatternLiteral, auth.OpAlter))
	c := ts.dial(t)
	cr := kmsg.NewPtrCreateACLsRequest()
	cr.Creations = []kmsg.CreateACLsRequestCreation{
		creation("User:alice", 2, "orders", 3, 3), // READ literal topic
		creation("User:alice", 2, "ord", 4, 4),    // WRITE prefixed topic
		creation("User:bob", 3, "g", 3, 2),        // ALL on group g
		creation("alice", 2, "orders", 3, 3),      // no principal type
		creation("User:x", 2, "", 3, 3),           // empty name
		creation("User:x", 4, "my-cluster", 3, 7), // cluster not named kafka-cluster
		creation("User:x", 2, "t", 2, 3),          // MATCH pattern
		creation("User:x", 2, "t", 3, 1),          // ANY operation
		creation("User:x", 1, "t", 3, 3),          // ANY resource type
	}
	r := do[*kmsg.CreateACLsResponse](c, cr, 3)
	for i, want := range []int16{0, 0, 0, 42, 42, 42, 42, 42, 42} {
		if r.Results[i].ErrorCode != want {
			t.Errorf("creation %d: code %d, want %d", i, r.Results[i].ErrorCode, want)
		}
	}
	if got := m.Authorizer().Len(); got != 4 {
		t.Fatalf("%d bindings stored, want 4", got)
	}
	// The ALTER on the cluster implies DESCRIBE: DescribeAcls is allowed.
	d := kmsg.NewPtrDescribeACLsRequest()
	d.ResourceType, d.ResourcePatternType, d.Operation, d.PermissionType = 2, 2, 1, 1 // topics that apply to "orders"
	name := "orders"
	d.ResourceName = &name
	dresp := do[*kmsg.DescribeACLsResponse](c, d, 3)
	if dresp.ErrorCode != 0 || len(dresp.Resources) != 2 {
		t.Fatalf("describe MATCH orders: %+v", dresp)
	}
	if got := dresp.Resources[0]; got.ResourceName != "orders" || got.ResourcePatternType != 3 || got.ACLs[0].Operation != 3 {
		t.Errorf("first described pattern %+v", got)
	}
	d.ResourcePatternType = 0 // UNKNOWN
	if dresp := do[*kmsg.DescribeACLsResponse](c, d, 3); dresp.ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("describe with an UNKNOWN pattern type: %d", dresp.ErrorCode)
	}
	// v0 filters are literal.
	d0 := kmsg.NewPtrDescribeACLsRequest()
	d0.ResourceType, d0.Operation, d0.PermissionType = 1, 1, 1
	if dresp := do[*kmsg.DescribeACLsResponse](c, d0, 0); dresp.ErrorCode != 0 || len(dresp.Resources) != 3 {
		t.Errorf("describe v0: %+v", dresp)
	}

	dr := kmsg.NewPtrDeleteACLsRequest()
	bob := "User:bob"
	bad := "bob"
	dr.Filters = []kmsg.DeleteACLsRequestFilter{
		{ResourceType: 1, ResourcePatternType: 1, Principal: &bob, Operation: 1, PermissionType: 1},
		{ResourceType: 1, ResourcePatternType: 1, Principal: &bad, Operation: 1, PermissionType: 1},
		{ResourceType: 0, ResourcePatternType: 1, Operation: 1, PermissionType: 1},
	}
	dresp2 := do[*kmsg.DeleteACLsResponse](c, dr, 3)
	if res := dresp2.Results[0]; res.ErrorCode != 0 || len(res.MatchingACLs) != 1 || res.MatchingACLs[0].ResourceName != "g" {
		t.Errorf("delete bob's: %+v", res)
	}
	if dresp2.Results[1].ErrorCode != kerr.InvalidRequest.Code || dresp2.Results[2].ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("invalid filters: %d, %d", dresp2.Results[1].ErrorCode, dresp2.Results[2].ErrorCode)
	}
	if got := m.Authorizer().Len(); got != 3 {
		t.Fatalf("%d bindings left, want 3", got)
	}
}

// TestProduceFetchEnforced: WRITE on A but not B; READ only on A.
func TestProduceFetchEnforced(t *testing.T) {
	ts, _ := aclServer(t, acl.Config{},
		allowAnon(auth.ResourceTopic, "a", auth.PatternLiteral, auth.OpWrite),
		allowAnon(auth.ResourceTopic, "a", auth.PatternLiteral, auth.OpRead),
		allowAnon(auth.ResourceTopic, "b", auth.PatternLiteral, auth.OpDescribe))
	for _, name := range []string{"a", "b"} {
		if err := ts.broker.CreateTopic(server.TopicSpec{Name: name, Partitions: 1}); err != nil {
			t.Fatal(err)
		}
	}
	c := ts.dial(t)
	data := batch(t, records.BatchOptions{}, "v")
	if p := produceOne(c, 9, "a", data); p.ErrorCode != 0 {
		t.Fatalf("produce to a: %d", p.ErrorCode)
	}
	if p := produceOne(c, 9, "b", data); p.ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("produce to b: %d, want 29", p.ErrorCode)
	}
	if hw := ts.highWatermark(t, "b"); hw != 0 {
		t.Fatalf("a denied produce wrote: b's high watermark %d", hw)
	}
	f := do[*kmsg.FetchResponse](c, fetchReq("b", 0, 0, 0, 1), 12)
	if code := f.Topics[0].Partitions[0].ErrorCode; code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("fetch b: %d", code)
	}
	f = do[*kmsg.FetchResponse](c, fetchReq("a", 0, 0, 0, 1), 12)
	if vs := fetchValues(t, f.Topics[0].Partitions[0], 0); len(vs) != 1 {
		t.Fatalf("fetch a: %v", vs)
	}
	// One request for both: the denied topic's answer keeps its place
	// (with sendfile, each partition's chunks are matched by position).
	both := fetchReq("b", 0, 0, 0, 1)
	both.Topics = append(both.Topics, fetchReq("a", 0, 0, 0, 1).Topics...)
	f = do[*kmsg.FetchResponse](c, both, 12)
	if f.Topics[0].Topic != "b" || f.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("fetch b+a: b answered %+v", f.Topics[0])
	}
	if vs := fetchValues(t, f.Topics[1].Partitions[0], 0); f.Topics[1].Topic != "a" || len(vs) != 1 {
		t.Fatalf("fetch b+a: a answered %v", vs)
	}
	// A follower's fetch needs CLUSTER_ACTION.
	fr := fetchReq("a", 0, 0, 0, 1)
	fr.ReplicaID = 2
	f = do[*kmsg.FetchResponse](c, fr, 12)
	if code := f.Topics[0].Partitions[0].ErrorCode; code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("follower fetch without CLUSTER_ACTION: %d", code)
	}
}

func (ts *testServer) highWatermark(t *testing.T, topic string) int64 {
	p, err := ts.broker.Partition(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	return p.HighWatermark()
}

// TestMetadataEnforced: listing hides what may not be described; a named
// topic not described is 29 whether it exists or not; auto-creation
// needs CREATE.
func TestMetadataEnforced(t *testing.T) {
	ts, _ := aclServer(t, acl.Config{},
		allowAnon(auth.ResourceTopic, "seen", auth.PatternLiteral, auth.OpDescribe),
		allowAnon(auth.ResourceTopic, "new-", auth.PatternPrefixed, auth.OpDescribe),
		allowAnon(auth.ResourceTopic, "new-ok", auth.PatternLiteral, auth.OpCreate))
	for _, name := range []string{"seen", "hidden"} {
		if err := ts.broker.CreateTopic(server.TopicSpec{Name: name, Partitions: 1}); err != nil {
			t.Fatal(err)
		}
	}
	c := ts.dial(t)
	all := do[*kmsg.MetadataResponse](c, kmsg.NewPtrMetadataRequest(), 12)
	if len(all.Topics) != 1 || *all.Topics[0].Topic != "seen" {
		t.Fatalf("listing: %+v", all.Topics)
	}
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = true
	for _, n := range []string{"seen", "hidden", "missing", "new-denied", "new-ok"} {
		rt := kmsg.NewMetadataRequestTopic()
		name := n
		rt.Topic = &name
		req.Topics = append(req.Topics, rt)
	}
	resp := do[*kmsg.MetadataResponse](c, req, 12)
	for i, want := range []int16{0, 29, 29, 29, 0} {
		if got := resp.Topics[i].ErrorCode; got != want {
			t.Errorf("%s: code %d, want %d", *resp.Topics[i].Topic, got, want)
		}
	}
	if _, err := ts.broker.PartitionCount("new-denied"); err == nil {
		t.Error("new-denied was auto-created without CREATE")
	}
	if _, err := ts.broker.PartitionCount("new-ok"); err != nil {
		t.Errorf("new-ok was not auto-created: %v", err)
	}
}

// TestMetadataAutoCreateAuthorizesOnlyWhatItWouldCreate: librdkafka asks
// for its topics with AllowAutoTopicCreation on every refresh; a topic
// that exists needs no CREATE, so a principal without it is served and no
// refusal is logged. An unknown one is refused (29) and the topic's
// refusal alone is logged, the cluster being asked quietly, as Kafka does.
func TestMetadataAutoCreateAuthorizesOnlyWhatItWouldCreate(t *testing.T) {
	ts, _ := aclServer(t, acl.Config{},
		allowAnon(auth.ResourceTopic, "*", auth.PatternLiteral, auth.OpDescribe),
		allowAnon(auth.ResourceTopic, "existing", auth.PatternLiteral, auth.OpWrite))
	if err := ts.broker.CreateTopic(server.TopicSpec{Name: "existing", Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	c := ts.dial(t)
	metadata := func(name string) kmsg.MetadataResponseTopic {
		req := kmsg.NewPtrMetadataRequest()
		req.AllowAutoTopicCreation = true
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = &name
		req.Topics = []kmsg.MetadataRequestTopic{rt}
		return do[*kmsg.MetadataResponse](c, req, 12).Topics[0]
	}
	if mt := metadata("existing"); mt.ErrorCode != 0 || len(mt.Partitions) != 2 {
		t.Fatalf("existing: code %d, %d partitions", mt.ErrorCode, len(mt.Partitions))
	}
	if n := ts.logs.count("operation=CREATE"); n != 0 {
		t.Fatalf("%d CREATE refusals logged for a topic that exists", n)
	}
	if mt := metadata("unknown"); mt.ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("unknown: code %d, want 29", mt.ErrorCode)
	}
	if _, err := ts.broker.PartitionCount("unknown"); err == nil {
		t.Fatal("unknown was auto-created without CREATE")
	}
	if !ts.logs.has("msg=audit", "operation=CREATE", "resource=TOPIC:unknown", "outcome=denied") {
		t.Error("the refused auto-creation is not in the audit log")
	}
	if n := ts.logs.count("operation=CREATE", "resource=CLUSTER"); n != 0 {
		t.Errorf("%d refusals of CREATE on the cluster logged; Kafka asks it quietly", n)
	}
}

func TestGroupAndClusterAPIsEnforced(t *testing.T) {
	ts, _ := aclServer(t, acl.Config{},
		allowAnon(auth.ResourceTopic, "t", auth.PatternLiteral, auth.OpRead),
		allowAnon(auth.ResourceGroup, "ok-", auth.PatternPrefixed, auth.OpRead),
		denyAnon(auth.ResourceGroup, "ok-not", auth.PatternLiteral, auth.OpRead))
	c := ts.dial(t)
	for group, want := range map[string]int16{"ok-1": 0, "ok-not": 30, "other": 30} {
		j := kmsg.NewPtrJoinGroupRequest()
		j.Group, j.ProtocolType, j.SessionTimeoutMillis, j.RebalanceTimeoutMillis = group, "consumer", 10000, 10000
		j.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
		j.MemberID = ""
		got := do[*kmsg.JoinGroupResponse](c, j, 3).ErrorCode
		if want == 0 && got == kerr.GroupAuthorizationFailed.Code || want != 0 && got != want {
			t.Errorf("join %s: %d, want %d", group, got, want)
		}
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{"ok-1", "other"}
	fresp := do[*kmsg.FindCoordinatorResponse](c, fc, 4)
	codes := map[string]int16{}
	for _, co := range fresp.Coordinators {
		codes[co.Key] = co.ErrorCode
	}
	if codes["ok-1"] == kerr.GroupAuthorizationFailed.Code || codes["other"] != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("find coordinator: %v", codes)
	}
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Group, oc.Generation = "ok-commit", -1
	for _, topic := range []string{"t", "u"} {
		ot := kmsg.NewOffsetCommitRequestTopic()
		ot.Topic = topic
		ot.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}
		oc.Topics = append(oc.Topics, ot)
	}
	ocr := do[*kmsg.OffsetCommitResponse](c, oc, 8)
	for _, rt := range ocr.Topics {
		code := rt.Partitions[0].ErrorCode
		if rt.Topic == "u" && code != kerr.TopicAuthorizationFailed.Code || rt.Topic == "t" && code == kerr.TopicAuthorizationFailed.Code {
			t.Errorf("commit %s: %d", rt.Topic, code)
		}
	}
	if r := do[*kmsg.DescribeClusterResponse](c, kmsg.NewPtrDescribeClusterRequest(), 0); r.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("describe cluster: %d", r.ErrorCode)
	}
	if r := updateFeature(c, 1, 1, 2, false); r.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("update features without ALTER on the cluster: %d", r.ErrorCode)
	}
	ip := kmsg.NewPtrInitProducerIDRequest()
	if r := do[*kmsg.InitProducerIDResponse](c, ip, 4); r.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("init producer id without IDEMPOTENT_WRITE nor any topic WRITE: %d", r.ErrorCode)
	}
	ct := kmsg.NewPtrCreateTopicsRequest()
	ctt := kmsg.NewCreateTopicsRequestTopic()
	ctt.Topic, ctt.NumPartitions, ctt.ReplicationFactor = "c", 1, 1
	ct.Topics = []kmsg.CreateTopicsRequestTopic{ctt}
	if r := do[*kmsg.CreateTopicsResponse](c, ct, 5); r.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("create topic without CREATE: %d", r.Topics[0].ErrorCode)
	}
}

// TestSuperUserAndAllowIfNoACL: both open what bindings alone would not.
func TestSuperUserAndAllowIfNoACL(t *testing.T) {
	ts, _ := aclServer(t, acl.Config{SuperUsers: []auth.Principal{auth.Anonymous}})
	c := ts.dial(t)
	if p := produceOne(c, 9, "anything", batch(t, records.BatchOptions{}, "v")); p.ErrorCode != 0 {
		t.Fatalf("super user produce: %d", p.ErrorCode)
	}
	ts2, _ := aclServer(t, acl.Config{AllowIfNoACL: true},
		denyAnon(auth.ResourceTopic, "closed", auth.PatternLiteral, auth.OpWrite))
	c2 := ts2.dial(t)
	if p := produceOne(c2, 9, "open", batch(t, records.BatchOptions{}, "v")); p.ErrorCode != 0 {
		t.Fatalf("produce with no ACL on the topic: %d", p.ErrorCode)
	}
	if p := produceOne(c2, 9, "closed", batch(t, records.BatchOptions{}, "v")); p.ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("produce to a topic with a deny: %d", p.ErrorCode)
	}
}

// FuzzACLRequests feeds arbitrary DescribeAcls, CreateAcls and DeleteAcls
// bodies to a listener whose principal may alter ACLs: no panic, and every
// answer encodes to what the version allows.
func FuzzACLRequests(f *testing.F) {
	seeds := []kmsg.Request{
		func() kmsg.Request {
			r := kmsg.NewPtrCreateACLsRequest()
			r.Creations = []kmsg.CreateACLsRequestCreation{creation("User:a", 2, "t", 4, 3)}
			return r
		}(),
		func() kmsg.Request {
			r := kmsg.NewPtrDescribeACLsRequest()
			r.ResourceType, r.ResourcePatternType, r.Operation, r.PermissionType = 1, 2, 1, 1
			return r
		}(),
		func() kmsg.Request {
			r := kmsg.NewPtrDeleteACLsRequest()
			r.Filters = []kmsg.DeleteACLsRequestFilter{{ResourceType: 2, ResourcePatternType: 1, Operation: 1, PermissionType: 1}}
			return r
		}(),
	}
	for _, req := range seeds {
		for v := int16(0); v <= 3; v++ {
			req.SetVersion(v)
			f.Add(req.Key(), v, req.AppendTo(nil))
		}
	}
	m := acl.NewManager(acl.New(acl.Config{SuperUsers: []auth.Principal{auth.Anonymous}}), &acl.MemoryStore{})
	ts := newTestServer(f, func(c *Config) { c.ACLs = m })
	f.Fuzz(func(t *testing.T, key, version int16, body []byte) {
		key = 29 + int16(uint16(key)%3)
		version = int16(uint16(version) % 4)
		req := kmsg.RequestForKey(key)
		req.SetVersion(version)
		if err := req.ReadFrom(body); err != nil {
			return
		}
		resp := lookupAPI(key).serve(ts.Server, ts.ctx, req)
		resp.SetVersion(version)
		check := kmsg.ResponseForKey(key)
		check.SetVersion(version)
		if err := check.ReadFrom(resp.AppendTo(nil)); err != nil {
			t.Fatalf("%s v%d response does not decode: %v", kmsg.NameForKey(key), version, err)
		}
	})
}

// TestAuthorizedOperations: Metadata, DescribeGroups and DescribeCluster
// report what the principal may do when asked, as a bitfield of
// operation codes (every supported one with ACLs off).
func TestAuthorizedOperations(t *testing.T) {
	bits := func(ops ...auth.Operation) int32 {
		var b int32
		for _, op := range ops {
			b |= 1 << op
		}
		return b
	}
	allTopicOps := bits(auth.OpRead, auth.OpWrite, auth.OpCreate, auth.OpDescribe, auth.OpDelete, auth.OpAlter,
		auth.OpDescribeConfigs, auth.OpAlterConfigs)
	metadata := func(c *client) *kmsg.MetadataResponse {
		req := kmsg.NewPtrMetadataRequest()
		name := "ops"
		req.Topics = []kmsg.MetadataRequestTopic{{Topic: &name}}
		req.IncludeClusterAuthorizedOperations, req.IncludeTopicAuthorizedOperations = true, true
		return do[*kmsg.MetadataResponse](c, req, 10)
	}
	off := newTestServer(t)
	if err := off.broker.CreateTopic(server.TopicSpec{Name: "ops", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	if got := metadata(off.dial(t)).Topics[0].AuthorizedOperations; got != allTopicOps {
		t.Errorf("ACLs off: topic operations %b, want %b", got, allTopicOps)
	}
	on, _ := aclServer(t, acl.Config{},
		allowAnon(auth.ResourceTopic, "ops", auth.PatternLiteral, auth.OpRead),
		allowAnon(auth.ResourceCluster, auth.ClusterName, auth.PatternLiteral, auth.OpIdempotentWrite),
		allowAnon(auth.ResourceGroup, "g", auth.PatternLiteral, auth.OpRead))
	if err := on.broker.CreateTopic(server.TopicSpec{Name: "ops", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	c := on.dial(t)
	m := metadata(c)
	if got, want := m.Topics[0].AuthorizedOperations, bits(auth.OpRead, auth.OpDescribe); got != want {
		t.Errorf("topic operations %b, want %b", got, want)
	}
	if got, want := m.AuthorizedOperations, bits(auth.OpIdempotentWrite); got != want {
		t.Errorf("cluster operations %b, want %b", got, want)
	}
	notAsked := do[*kmsg.MetadataResponse](c, kmsg.NewPtrMetadataRequest(), 10)
	if len(notAsked.Topics) != 1 || notAsked.Topics[0].AuthorizedOperations != -2147483648 {
		t.Errorf("not asked: %+v", notAsked.Topics)
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups, dg.IncludeAuthorizedOperations = []string{"g"}, true
	if got, want := do[*kmsg.DescribeGroupsResponse](c, dg, 5).Groups[0].AuthorizedOperations, bits(auth.OpRead, auth.OpDescribe); got != want {
		t.Errorf("group operations %b, want %b", got, want)
	}
}

// The audit log of the Kafka listener: an administrative request is
// logged with its outcome (allowed, failed, denied), a refusal by the
// ACLs is logged with what was refused, and the same refusal again within
// the minute is not logged twice.
func TestAuditLinesForAdministrativeRequests(t *testing.T) {
	ts, _ := aclServer(t, acl.Config{}, allowAnon(auth.ResourceCluster, auth.ClusterName, auth.PatternLiteral, auth.OpCreate))
	c := ts.dial(t)
	createTopic := func() int16 {
		ct := kmsg.NewPtrCreateTopicsRequest()
		ctt := kmsg.NewCreateTopicsRequestTopic()
		ctt.Topic, ctt.NumPartitions, ctt.ReplicationFactor = "audited", 1, 1
		ct.Topics = []kmsg.CreateTopicsRequestTopic{ctt}
		return do[*kmsg.CreateTopicsResponse](c, ct, 5).Topics[0].ErrorCode
	}
	deleteTopic := func() int16 {
		dt := kmsg.NewPtrDeleteTopicsRequest()
		dt.TopicNames = []string{"audited"}
		return do[*kmsg.DeleteTopicsResponse](c, dt, 4).Topics[0].ErrorCode
	}
	if code := createTopic(); code != 0 {
		t.Fatalf("create: %d", code)
	}
	if code := createTopic(); code != kerr.TopicAlreadyExists.Code {
		t.Fatalf("create again: %d", code)
	}
	for range 3 {
		if code := deleteTopic(); code != kerr.TopicAuthorizationFailed.Code {
			t.Fatalf("delete without DELETE: %d", code)
		}
	}
	for _, want := range [][]string{
		{"msg=audit", "principal=User:ANONYMOUS", "api=CreateTopics", "outcome=allowed"},
		{"msg=audit", "api=CreateTopics", "outcome=failed", "errors=1"},
		{"msg=audit", "api=DeleteTopics", "outcome=denied"},
	} {
		if !ts.logs.has(want...) {
			t.Errorf("no audit line with %v", want)
		}
	}
	if n := ts.logs.count("msg=audit", "operation=DELETE", "resource=TOPIC:audited", "outcome=denied"); n != 1 {
		t.Errorf("%d audit lines for the same refusal three times, want 1 (once a minute)", n)
	}
	if n := ts.logs.count("msg=audit", "api=DeleteTopics"); n != 3 {
		t.Errorf("%d audit lines for three DeleteTopics, want one each", n)
	}
}
