package handlers

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller/acl"
	"github.com/samsa-broker/samsa/wire"
)

// callAs sends req at version v as principal, through the wire encoding
// and Serve (so with the authorization of the API).
func (e *adminEnv) callAs(t *testing.T, principal string, req kmsg.Request, v int16) kmsg.Response {
	t.Helper()
	req.SetVersion(v)
	client := "authz-test"
	frame := wire.AppendRequest(nil, wire.RequestHeader{APIVersion: v, CorrelationID: 7, ClientID: &client}, req)
	hdr, decoded, err := wire.ParseRequest(frame[4:])
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	var entry *Entry
	for _, en := range Table() {
		if en.Key == req.Key() {
			entry = &en
		}
	}
	resp, err := Serve(*entry, e.d, &Request{Header: hdr, Body: decoded, Principal: principal, ClientHost: "127.0.0.1"})
	if err != nil {
		t.Fatalf("handler: %v", err)
	}
	resp.SetVersion(v)
	back := decoded.ResponseKind()
	back.SetVersion(v)
	if err := back.ReadFrom(resp.AppendTo(nil)); err != nil {
		t.Fatalf("decoding response v%d: %v", v, err)
	}
	return back
}

func aclCreation(typ kmsg.ACLResourceType, name string, pat kmsg.ACLResourcePatternType, principal string, op kmsg.ACLOperation) kmsg.CreateACLsRequestCreation {
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = typ, name, pat
	c.Principal, c.Host, c.Operation, c.PermissionType = principal, "*", op, kmsg.ACLPermissionTypeAllow
	return c
}

// TestACLAPIsWithoutAuthorizer: Kafka answers SECURITY_DISABLED.
func TestACLAPIsWithoutAuthorizer(t *testing.T) {
	e := newAdminEnv(t)
	d := kmsg.NewPtrDescribeACLsRequest()
	d.ResourceType, d.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	d.Operation, d.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	if r := e.callAs(t, "User:ANONYMOUS", d, 3).(*kmsg.DescribeACLsResponse); r.ErrorCode != kerr.SecurityDisabled.Code {
		t.Errorf("describe: %d", r.ErrorCode)
	}
	c := kmsg.NewPtrCreateACLsRequest()
	c.Creations = append(c.Creations, aclCreation(kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypeLiteral, "User:a", kmsg.ACLOperationRead))
	if r := e.callAs(t, "User:ANONYMOUS", c, 3).(*kmsg.CreateACLsResponse); r.Results[0].ErrorCode != kerr.SecurityDisabled.Code {
		t.Errorf("create: %+v", r.Results)
	}
	del := kmsg.NewPtrDeleteACLsRequest()
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	del.Filters = append(del.Filters, f)
	if r := e.callAs(t, "User:ANONYMOUS", del, 3).(*kmsg.DeleteACLsResponse); r.Results[0].ErrorCode != kerr.SecurityDisabled.Code {
		t.Errorf("delete: %+v", r.Results)
	}
}

// TestAuthorizationThroughServe: the ACL APIs as a super user and as
// principals with and without ACLs, and what Metadata, ListOffsets,
// CreateTopics and DescribeConfigs let each of them see or do; and the
// same CreateAcls forwarded in an Envelope, authorized as the principal
// it carries.
func TestAuthorizationThroughServe(t *testing.T) {
	e := newAdminEnv(t)
	e.d.Authz = &Authz{Authorizer: acl.Authorizer{SuperUsers: []string{"User:admin"}}}
	e.createTopic(t, "orders", 1, nil)
	e.createTopic(t, "secret", 1, nil)

	c := kmsg.NewPtrCreateACLsRequest()
	c.Creations = []kmsg.CreateACLsRequestCreation{
		aclCreation(kmsg.ACLResourceTypeTopic, "ord", kmsg.ACLResourcePatternTypePrefixed, "User:alice", kmsg.ACLOperationRead),
		aclCreation(kmsg.ACLResourceTypeTopic, "new-", kmsg.ACLResourcePatternTypePrefixed, "User:alice", kmsg.ACLOperationCreate),
		aclCreation(kmsg.ACLResourceTypeTopic, "x", kmsg.ACLResourcePatternTypeLiteral, "alice", kmsg.ACLOperationRead),
		aclCreation(kmsg.ACLResourceTypeCluster, "other", kmsg.ACLResourcePatternTypeLiteral, "User:alice", kmsg.ACLOperationAlter),
	}
	if r := e.callAs(t, "User:alice", c, 3).(*kmsg.CreateACLsResponse); r.Results[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("create as alice: %+v", r.Results)
	}
	r := e.callAs(t, "User:admin", c, 3).(*kmsg.CreateACLsResponse)
	if codes := [4]int16{r.Results[0].ErrorCode, r.Results[1].ErrorCode, r.Results[2].ErrorCode, r.Results[3].ErrorCode}; codes != [4]int16{0, 0, 42, 42} {
		t.Fatalf("create as admin: %+v", r.Results)
	}
	if n := e.d.Controller.Image().ACLs.Len(); n != 2 {
		t.Fatalf("%d ACLs stored", n)
	}

	// Describe with MATCH of a topic name finds the prefixed ACL.
	dr := kmsg.NewPtrDescribeACLsRequest()
	dr.ResourceType, dr.ResourcePatternType, dr.ResourceName = kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeMatch, ptrTo("orders")
	dr.Operation, dr.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	if got := e.callAs(t, "User:bob", dr, 2).(*kmsg.DescribeACLsResponse); got.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("describe as bob: %d", got.ErrorCode)
	}
	got := e.callAs(t, "User:admin", dr, 2).(*kmsg.DescribeACLsResponse)
	if got.ErrorCode != 0 || len(got.Resources) != 1 || got.Resources[0].ResourceName != "ord" || len(got.Resources[0].ACLs) != 1 {
		t.Fatalf("describe: %+v", got)
	}

	// Metadata: alice sees orders (READ implies DESCRIBE) but not secret.
	md := kmsg.NewPtrMetadataRequest()
	mr := e.callAs(t, "User:alice", md, 12).(*kmsg.MetadataResponse)
	if len(mr.Topics) != 1 || *mr.Topics[0].Topic != "orders" {
		t.Fatalf("alice's topics: %+v", mr.Topics)
	}
	if mr := e.callAs(t, "User:bob", md, 12).(*kmsg.MetadataResponse); len(mr.Topics) != 0 {
		t.Fatalf("bob's topics: %+v", mr.Topics)
	}
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: ptrTo("secret")}, {Topic: ptrTo("orders")}}
	md.IncludeTopicAuthorizedOperations = true
	mr = e.callAs(t, "User:alice", md, 12).(*kmsg.MetadataResponse)
	codes := map[string]int16{}
	for _, t := range mr.Topics {
		codes[*t.Topic] = t.ErrorCode
	}
	if codes["orders"] != 0 || codes["secret"] != kerr.TopicAuthorizationFailed.Code || mr.Topics[0].AuthorizedOperations != 1<<kmsg.ACLOperationRead|1<<kmsg.ACLOperationDescribe {
		t.Fatalf("named topics: %+v", mr.Topics)
	}

	// ListOffsets: DESCRIBE per topic.
	lo := kmsg.NewPtrListOffsetsRequest()
	for _, name := range []string{"orders", "secret"} {
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = name
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Timestamp = -1
		lt.Partitions = append(lt.Partitions, lp)
		lo.Topics = append(lo.Topics, lt)
	}
	// (This environment hosts no logs: orders answers NOT_LEADER, which
	// shows it got past the authorization.)
	lr := e.callAs(t, "User:alice", lo, 7).(*kmsg.ListOffsetsResponse)
	for _, lt := range lr.Topics {
		if denied := lt.Partitions[0].ErrorCode == kerr.TopicAuthorizationFailed.Code; denied != (lt.Topic == "secret") {
			t.Errorf("list offsets %s: %d", lt.Topic, lt.Partitions[0].ErrorCode)
		}
	}

	// CreateTopics: CREATE on the new- prefix only.
	ct := kmsg.NewPtrCreateTopicsRequest()
	for _, name := range []string{"new-a", "other"} {
		tt := kmsg.NewCreateTopicsRequestTopic()
		tt.Topic, tt.NumPartitions, tt.ReplicationFactor = name, 1, 1
		ct.Topics = append(ct.Topics, tt)
	}
	cr := e.callAs(t, "User:alice", ct, 7).(*kmsg.CreateTopicsResponse)
	for _, tt := range cr.Topics {
		want := int16(0)
		if tt.Topic == "other" {
			want = kerr.TopicAuthorizationFailed.Code
		}
		if tt.ErrorCode != want {
			t.Errorf("create %s: %d, want %d", tt.Topic, tt.ErrorCode, want)
		}
		// No DESCRIBE_CONFIGS on new-a: its configs are withheld.
		if tt.Topic == "new-a" && (tt.ConfigErrorCode != kerr.TopicAuthorizationFailed.Code || len(tt.Configs) != 0) {
			t.Errorf("configs of new-a: %d %d", tt.ConfigErrorCode, len(tt.Configs))
		}
	}

	// DescribeConfigs of a broker needs DESCRIBE_CONFIGS on the cluster.
	dc := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
	dc.Resources = append(dc.Resources, res)
	if got := e.callAs(t, "User:alice", dc, 4).(*kmsg.DescribeConfigsResponse); got.Resources[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("describe broker configs: %d", got.Resources[0].ErrorCode)
	}

	// The same CreateAcls forwarded in an Envelope: authorized as the
	// principal inside, not as the forwarding node.
	one := kmsg.NewPtrCreateACLsRequest()
	one.Creations = []kmsg.CreateACLsRequestCreation{aclCreation(kmsg.ACLResourceTypeGroup, "g", kmsg.ACLResourcePatternTypeLiteral, "User:alice", kmsg.ACLOperationRead)}
	enveloped := func(principal string) *kmsg.CreateACLsResponse {
		client := "c"
		frame := wire.AppendRequest(nil, wire.RequestHeader{APIVersion: 3, CorrelationID: 99, ClientID: &client}, one)
		env := e.callAs(t, "User:ANONYMOUS", EnvelopeFor(frame[4:], principal, "127.0.0.1"), 0).(*kmsg.EnvelopeResponse)
		if env.ErrorCode != 0 {
			t.Fatalf("envelope: %d", env.ErrorCode)
		}
		inner := kmsg.NewPtrCreateACLsResponse()
		inner.SetVersion(3)
		body, err := wire.SkipTags(env.ResponseData[4:]) // correlation id, then the flexible header's tags
		if err != nil {
			t.Fatal(err)
		}
		if err := inner.ReadFrom(body); err != nil {
			t.Fatal(err)
		}
		return inner
	}
	if r := enveloped("User:alice"); r.Results[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("enveloped as alice: %+v", r.Results)
	}
	if r := enveloped("User:admin"); r.Results[0].ErrorCode != 0 {
		t.Errorf("enveloped as admin: %+v", r.Results)
	}

	// DeleteAcls lists what each filter matched.
	del := kmsg.NewPtrDeleteACLsRequest()
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourcePatternType, f.Operation, f.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	del.Filters = append(del.Filters, f)
	if r := e.callAs(t, "User:admin", del, 3).(*kmsg.DeleteACLsResponse); r.Results[0].ErrorCode != 0 || len(r.Results[0].MatchingACLs) != 3 {
		t.Fatalf("delete: %+v", r.Results)
	}
	if n := e.d.Controller.Image().ACLs.Len(); n != 0 {
		t.Fatalf("%d ACLs left", n)
	}
}

// TestFetchSessionReauthorized: the partitions of an incremental fetch
// session are authorized on every fetch, so an ACL deleted while a
// consumer's session is open applies to its next fetch.
func TestFetchSessionReauthorized(t *testing.T) {
	e := newAdminEnv(t)
	e.d.Init()
	e.d.Authz = &Authz{Authorizer: acl.Authorizer{}}
	e.createTopic(t, "orders", 1, nil)
	if res := e.d.Controller.CreateACLs([]acl.Binding{{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "orders",
		PatternType: kmsg.ACLResourcePatternTypeLiteral, Principal: "User:alice", Host: "*", Operation: kmsg.ACLOperationRead,
		Permission: kmsg.ACLPermissionTypeAllow}}); res[0].ErrorCode != 0 {
		t.Fatal(res)
	}
	fetch := func(sessionID, epoch int32, withTopic bool) (*kmsg.FetchResponse, int16) {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxBytes, req.SessionID, req.SessionEpoch = -1, 1<<20, sessionID, epoch
		if withTopic {
			ft := kmsg.NewFetchRequestTopic()
			ft.Topic = "orders"
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.PartitionMaxBytes = 1 << 20
			ft.Partitions = append(ft.Partitions, fp)
			req.Topics = append(req.Topics, ft)
		}
		resp := e.callAs(t, "User:alice", req, 12).(*kmsg.FetchResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return resp, -100
		}
		return resp, resp.Topics[0].Partitions[0].ErrorCode
	}
	// This environment hosts no logs: NOT_LEADER shows the authorization
	// passed.
	resp, code := fetch(0, 0, true)
	if code == kerr.TopicAuthorizationFailed.Code || resp.SessionID == 0 {
		t.Fatalf("first fetch: session %d code %d", resp.SessionID, code)
	}
	name := "orders"
	e.d.Controller.DeleteACLs([]acl.Filter{{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: &name,
		PatternType: kmsg.ACLResourcePatternTypeAny, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}})
	if _, code := fetch(resp.SessionID, 1, false); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("incremental fetch after the ACL was deleted: %d, want TOPIC_AUTHORIZATION_FAILED", code)
	}
}

// TestSyncGroupMandatoryProtocol: from v5 a SyncGroup without protocol
// type or name is INCONSISTENT_GROUP_PROTOCOL before anything else, the
// authorization included, as Kafka's KafkaApis (found by the ACL matrix:
// samsa did not check them).
func TestSyncGroupMandatoryProtocol(t *testing.T) {
	e := newAdminEnv(t)
	e.d.Authz = &Authz{Authorizer: acl.Authorizer{}}
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.MemberID, req.Generation = "g", "m", 1
	if r := e.callAs(t, "User:bob", req, 5).(*kmsg.SyncGroupResponse); r.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Errorf("v5 without protocol: %d", r.ErrorCode)
	}
	if r := e.callAs(t, "User:bob", req, 4).(*kmsg.SyncGroupResponse); r.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("v4 without protocol, no ACL: %d", r.ErrorCode)
	}
	req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	if r := e.callAs(t, "User:bob", req, 5).(*kmsg.SyncGroupResponse); r.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("v5 with protocol, no ACL: %d", r.ErrorCode)
	}
}

// TestClientQuotasAuthorization: the client quota APIs (served by other
// work) need DESCRIBE_CONFIGS / ALTER_CONFIGS on the cluster.
func TestClientQuotasAuthorization(t *testing.T) {
	e := newAdminEnv(t)
	e.d.Authz = &Authz{Authorizer: acl.Authorizer{}}
	next := func(*Deps, *Request) (kmsg.Response, error) { return nil, nil }
	d := kmsg.NewPtrDescribeClientQuotasRequest()
	resp, _ := authzCheck(d.Key())(e.d, &Request{Body: d, Principal: "User:bob"}, next)
	if r := resp.(*kmsg.DescribeClientQuotasResponse); r.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("describe: %d", r.ErrorCode)
	}
	a := kmsg.NewPtrAlterClientQuotasRequest()
	a.Entries = []kmsg.AlterClientQuotasRequestEntry{{Entity: []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "user", Name: kmsg.StringPtr("bob")}}}}
	resp, _ = authzCheck(a.Key())(e.d, &Request{Body: a, Principal: "User:bob"}, next)
	if r := resp.(*kmsg.AlterClientQuotasResponse); len(r.Entries) != 1 || r.Entries[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code || *r.Entries[0].Entity[0].Name != "bob" {
		t.Errorf("alter: %+v", r.Entries)
	}
	// A super user passes to the handler.
	e.d.Authz.SuperUsers = []string{"User:admin"}
	if resp, _ := authzCheck(a.Key())(e.d, &Request{Body: a, Principal: "User:admin"}, next); resp != nil {
		t.Errorf("super user: %+v", resp)
	}
}

// TestEnvelopeOfOtherNodesBrokerConfig is the regression test of a bug the
// Envelope brought: an IncrementalAlterConfigs of another node's BROKER
// resource, forwarded by that node (which checked the id), was refused by
// the active controller with "Unexpected node id" (kafka-reassign-partitions
// --verify clears throttles so; TestPartitionReassignment).
func TestEnvelopeOfOtherNodesBrokerConfig(t *testing.T) {
	e := newAdminEnv(t)
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeBroker, "3"
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op = "leader.replication.throttled.rate", kmsg.IncrementalAlterConfigOpDelete
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	client := "c"
	frame := wire.AppendRequest(nil, wire.RequestHeader{APIVersion: 1, CorrelationID: 5, ClientID: &client}, req)
	env := e.callAs(t, "User:ANONYMOUS", EnvelopeFor(frame[4:], "User:admin", "127.0.0.1"), 0).(*kmsg.EnvelopeResponse)
	inner := kmsg.NewPtrIncrementalAlterConfigsResponse()
	inner.SetVersion(1)
	body, err := wire.SkipTags(env.ResponseData[4:])
	if err != nil {
		t.Fatal(err)
	}
	if err := inner.ReadFrom(body); err != nil {
		t.Fatal(err)
	}
	if code := inner.Resources[0].ErrorCode; code == kerr.InvalidRequest.Code {
		t.Fatalf("forwarded alter of broker 3: INVALID_REQUEST %v", inner.Resources[0].ErrorMessage)
	}
}

// TestUnknownACLElementsClose: an UNKNOWN value in a CreateAcls creation
// or a DescribeAcls / DeleteAcls filter closes the connection (a handler
// error), as Kafka, which fails to parse the request.
func TestUnknownACLElementsClose(t *testing.T) {
	e := newAdminEnv(t)
	e.d.Authz = &Authz{Authorizer: acl.Authorizer{SuperUsers: []string{"User:admin"}}}
	serve := func(req kmsg.Request) error {
		var entry Entry
		for _, en := range Table() {
			if en.Key == req.Key() {
				entry = en
			}
		}
		_, err := Serve(entry, e.d, &Request{Header: wire.RequestHeader{APIKey: req.Key(), APIVersion: 3}, Body: req, Principal: "User:admin"})
		return err
	}
	d := kmsg.NewPtrDescribeACLsRequest() // resource type 0: UNKNOWN
	if err := serve(d); !errors.Is(err, ErrUnknownACLElements) {
		t.Errorf("describe: %v", err)
	}
	c := kmsg.NewPtrCreateACLsRequest()
	c.Creations = append(c.Creations, aclCreation(kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypeLiteral, "User:a", 16))
	if err := serve(c); !errors.Is(err, ErrUnknownACLElements) {
		t.Errorf("create with operation 16: %v", err)
	}
	del := kmsg.NewPtrDeleteACLsRequest()
	del.Filters = append(del.Filters, kmsg.NewDeleteACLsRequestFilter())
	if err := serve(del); !errors.Is(err, ErrUnknownACLElements) {
		t.Errorf("delete: %v", err)
	}
}
