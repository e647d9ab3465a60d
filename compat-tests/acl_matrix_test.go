package compattests

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/samsa-broker/samsa/compat-tests/harness"
	"github.com/samsa-broker/samsa/compat-tests/kafkaref"
	"github.com/samsa-broker/samsa/wire"
)

// The ACL matrix: one samsa and one Apache Kafka 4.4 broker, each with a
// SASL_PLAINTEXT PLAIN listener, the StandardAuthorizer and User:admin as
// super user. alice gets the ACLs each API needs, bob none; every API is
// sent as both and the error codes of the two brokers must agree. Kafka
// starts once for the whole test.

const (
	aclTopic     = "acl-t"
	aclDenyTopic = "acl-deny"
	aclGroup     = "acl-g"
	aclTxn       = "acl-tx"
	// aclJoinGroup is where the membership APIs go: a JoinGroup leaves a
	// pending member, which must not stop the DeleteGroups of aclGroup.
	aclJoinGroup = "acl-join"
)

var aclUsers = map[string]string{"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}

func aclJAAS(withClient bool) string {
	var b strings.Builder
	b.WriteString("org.apache.kafka.common.security.plain.PlainLoginModule required")
	if withClient {
		b.WriteString(` username="admin" password="admin-secret"`)
	}
	for _, u := range []string{"admin", "alice", "bob"} {
		fmt.Fprintf(&b, ` user_%s="%s"`, u, aclUsers[u])
	}
	b.WriteString(";")
	return b.String()
}

// startACLBrokers starts samsa and Kafka with authorization on and
// returns the address of each one's SASL PLAIN listener, and the samsa
// process.
func startACLBrokers(t *testing.T) (samsaAddr, kafkaAddr string, samsaBroker *harness.Broker) {
	kafkaref.Require(t)
	// From below the ephemeral range (harness.FreePorts), where no
	// outgoing connection takes it before the broker binds it.
	samsaAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(harness.FreePorts(t, 1)[0]))
	var wg sync.WaitGroup
	wg.Go(func() {
		samsaBroker = harness.Start(t, harness.Options{
			ListenersExtra: "SASL_PLAINTEXT://" + samsaAddr,
			Env: []string{
				"KAFKA_AUTHORIZER_CLASS_NAME=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
				"KAFKA_SUPER_USERS=User:admin",
				"KAFKA_SASL_ENABLED_MECHANISMS=PLAIN",
				"KAFKA_LISTENER_NAME_SASL__PLAINTEXT_PLAIN_SASL_JAAS_CONFIG=" + aclJAAS(false),
			},
		})
	})
	wg.Go(func() {
		kafkaAddr = kafkaref.Start(t, kafkaref.Options{Overrides: []string{
			"listener.security.protocol.map=PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
			"sasl.enabled.mechanisms=PLAIN",
			"sasl.mechanism.inter.broker.protocol=PLAIN",
			"listener.name.plaintext.plain.sasl.jaas.config=" + aclJAAS(true),
			"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
			// The controller listener is PLAINTEXT: its principal is
			// ANONYMOUS, which must be allowed the controller APIs.
			"super.users=User:admin;User:ANONYMOUS",
		}}).Bootstrap()
	})
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return samsaAddr, kafkaAddr, samsaBroker
}

// aclClient is a client of addr authenticated as user.
func aclClient(t *testing.T, addr, user string) *kgo.Client {
	t.Helper()
	// The matrix names topics, so it pins the versions before topic ids
	// (Produce v13, Fetch v13, OffsetCommit v10, TxnOffsetCommit v6) and
	// the client AddPartitionsToTxn (v3; v4+ is broker to broker).
	versions := kversion.Stable()
	for key, v := range map[kmsg.Key]int16{kmsg.Produce: 12, kmsg.Fetch: 12, kmsg.OffsetCommit: 9, kmsg.TxnOffsetCommit: 5, kmsg.AddPartitionsToTxn: 3} {
		versions.SetMaxKeyVersion(int16(key), v)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(plain.Auth{User: user, Pass: aclUsers[user]}.AsMechanism()),
		kgo.RequestRetries(0), kgo.RetryTimeout(time.Second), kgo.MaxVersions(versions))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// send sends req to the seed broker itself (no sharding, no retries by
// the client), retrying only a failed connection.
func send(ctx context.Context, cl *kgo.Client, req kmsg.Request) (kmsg.Response, error) {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		var resp kmsg.Response
		if resp, err = cl.SeedBrokers()[0].Request(ctx, req); err == nil {
			return resp, nil
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(200 * time.Millisecond): // retry pacing, not a condition wait
		}
	}
	return nil, err
}

func aclBinding(typ kmsg.ACLResourceType, name string, pat kmsg.ACLResourcePatternType, principal string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) kmsg.CreateACLsRequestCreation {
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = typ, name, pat
	c.Principal, c.Host, c.Operation, c.PermissionType = principal, "*", op, perm
	return c
}

// aliceACLs are the ACLs of the matrix: alice may do what each API needs
// on the acl- topics, group acl-g, transactional id acl-tx and the
// cluster (DESCRIBE and ALTER), but not WRITE to acl-deny (a DENY over
// the prefix ALLOW).
func aliceACLs() []kmsg.CreateACLsRequestCreation {
	allow, deny := kmsg.ACLPermissionTypeAllow, kmsg.ACLPermissionTypeDeny
	lit, pre := kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed
	var out []kmsg.CreateACLsRequestCreation
	for _, op := range []kmsg.ACLOperation{kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate, kmsg.ACLOperationDelete,
		kmsg.ACLOperationAlter, kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs} {
		out = append(out, aclBinding(kmsg.ACLResourceTypeTopic, "acl-", pre, "User:alice", op, allow))
	}
	out = append(out,
		aclBinding(kmsg.ACLResourceTypeTopic, aclDenyTopic, lit, "User:alice", kmsg.ACLOperationWrite, deny),
		aclBinding(kmsg.ACLResourceTypeGroup, "acl-", pre, "User:alice", kmsg.ACLOperationRead, allow),
		aclBinding(kmsg.ACLResourceTypeGroup, aclGroup, lit, "User:alice", kmsg.ACLOperationDelete, allow),
		aclBinding(kmsg.ACLResourceTypeTransactionalId, aclTxn, lit, "User:alice", kmsg.ACLOperationWrite, allow),
		aclBinding(kmsg.ACLResourceTypeCluster, "kafka-cluster", lit, "User:alice", kmsg.ACLOperationDescribe, allow),
		aclBinding(kmsg.ACLResourceTypeCluster, "kafka-cluster", lit, "User:alice", kmsg.ACLOperationAlter, allow),
	)
	return out
}

func aclBatch() []byte {
	b, err := wire.EncodeBatch(wire.BatchSpec{BaseTimestamp: 1700000000000, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
		Records: []wire.Record{{Key: []byte("k"), Value: []byte("v")}}})
	if err != nil {
		panic(err) // invariant: a fixed valid spec
	}
	return b
}

// aclSetup creates the topics, a committed offset and alice's ACLs as
// admin, and waits until alice's ACLs are in force.
func aclSetup(t *testing.T, ctx context.Context, addr string) {
	admin := aclClient(t, addr, "admin")
	ct := kmsg.NewPtrCreateTopicsRequest()
	for _, name := range []string{aclTopic, aclDenyTopic} {
		tt := kmsg.NewCreateTopicsRequestTopic()
		tt.Topic, tt.NumPartitions, tt.ReplicationFactor = name, 1, 1
		ct.Topics = append(ct.Topics, tt)
	}
	if _, err := ct.RequestWith(ctx, admin); err != nil {
		t.Fatalf("%s: create topics: %v", addr, err)
	}
	if err := admin.ProduceSync(ctx, &kgo.Record{Topic: aclTopic, Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("%s: produce: %v", addr, err)
	}
	ca := kmsg.NewPtrCreateACLsRequest()
	ca.Creations = aliceACLs()
	resp, err := ca.RequestWith(ctx, admin)
	if err != nil {
		t.Fatalf("%s: create acls: %v", addr, err)
	}
	for _, r := range resp.Results {
		if r.ErrorCode != 0 {
			t.Fatalf("%s: create acl: %d %v", addr, r.ErrorCode, r.ErrorMessage)
		}
	}
	// Kafka creates its internal topics on the first FindCoordinator,
	// authorized as the client that sent it: let admin do that, and wait
	// for both coordinators. Kafka's brokers apply ACLs when they publish
	// the metadata: then wait until alice can describe the topic.
	// Then until the coordinators of the group and the transactional id
	// have loaded their partitions.
	for _, typ := range []int8{0, 1} {
		key := map[int8]string{0: aclGroup, 1: aclTxn}[typ]
		for {
			fc := kmsg.NewPtrFindCoordinatorRequest()
			fc.CoordinatorType, fc.CoordinatorKeys = typ, []string{key}
			r, err := send(ctx, admin, fc)
			if err == nil && r.(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode == 0 {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%s: no coordinator of type %d: %v", addr, typ, err)
			case <-time.After(200 * time.Millisecond): // poll pacing
			}
		}
	}
	loaded := func(r kmsg.Response) bool {
		switch r := r.(type) {
		case *kmsg.DescribeGroupsResponse:
			c := r.Groups[0].ErrorCode
			return c == 0 || c == kerr.GroupIDNotFound.Code
		case *kmsg.DescribeTransactionsResponse:
			c := r.TransactionStates[0].ErrorCode
			return c == 0 || c == kerr.TransactionalIDNotFound.Code
		}
		return false
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{aclGroup, aclJoinGroup}
	dt := kmsg.NewPtrDescribeTransactionsRequest()
	dt.TransactionalIDs = []string{aclTxn}
	for _, req := range []kmsg.Request{dg, dt} {
		for {
			r, err := send(ctx, admin, req)
			if err == nil && loaded(r) {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%s: coordinator not loaded (%T): %v %+v", addr, req, err, r)
			case <-time.After(200 * time.Millisecond): // poll pacing
			}
		}
	}
	alice := aclClient(t, addr, "alice")
	for {
		md := kmsg.NewPtrMetadataRequest()
		md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(aclTopic)}}
		r, err := send(ctx, alice, md)
		if err == nil && len(r.(*kmsg.MetadataResponse).Topics) == 1 && r.(*kmsg.MetadataResponse).Topics[0].ErrorCode == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: alice's ACLs never applied: %v", addr, err)
		case <-time.After(100 * time.Millisecond): // poll pacing
		}
	}
}

// aclCase is one request of the matrix and how to summarize its answer.
type aclCase struct {
	name string
	req  func() kmsg.Request
	// codes summarizes the response: the error codes that matter.
	codes func(kmsg.Response) string
}

func partCodes[T any](parts []T, code func(T) int16) string {
	var out []string
	for _, p := range parts {
		out = append(out, strconv.Itoa(int(code(p))))
	}
	return strings.Join(out, ",")
}

// messageKind is what the matrix compares of an error message: whether it
// is null, "" or some text (Kafka 4.4 answers "" on success in some
// results and null in others).
func messageKind(m *string) string {
	switch {
	case m == nil:
		return "null"
	case *m == "":
		return `""`
	}
	return "text"
}

func aclCases() []aclCase {
	topicReq := func(topic string) []kmsg.MetadataRequestTopic {
		return []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(topic)}}
	}
	return []aclCase{
		{"Produce", func() kmsg.Request {
			r := kmsg.NewPtrProduceRequest()
			r.Acks, r.TimeoutMillis = -1, 5000
			for _, topic := range []string{aclTopic, aclDenyTopic} {
				rt := kmsg.NewProduceRequestTopic()
				rt.Topic = topic
				rp := kmsg.NewProduceRequestTopicPartition()
				rp.Records = aclBatch()
				rt.Partitions = append(rt.Partitions, rp)
				r.Topics = append(r.Topics, rt)
			}
			return r
		}, func(resp kmsg.Response) string {
			var out []string
			for _, t := range resp.(*kmsg.ProduceResponse).Topics {
				out = append(out, fmt.Sprintf("%s=%d", t.Topic, t.Partitions[0].ErrorCode))
			}
			sort.Strings(out)
			return strings.Join(out, " ")
		}},
		{"Fetch", func() kmsg.Request {
			r := kmsg.NewPtrFetchRequest()
			r.MaxWaitMillis, r.MaxBytes = 0, 1<<20
			r.SetVersion(12)
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = aclTopic
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.PartitionMaxBytes = 1 << 20
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		}, func(resp kmsg.Response) string {
			r := resp.(*kmsg.FetchResponse)
			return fmt.Sprintf("%d/%s", r.ErrorCode, partCodes(r.Topics[0].Partitions, func(p kmsg.FetchResponseTopicPartition) int16 { return p.ErrorCode }))
		}},
		{"ListOffsets", func() kmsg.Request {
			r := kmsg.NewPtrListOffsetsRequest()
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = aclTopic
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Timestamp = -1
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		}, func(resp kmsg.Response) string {
			return partCodes(resp.(*kmsg.ListOffsetsResponse).Topics[0].Partitions, func(p kmsg.ListOffsetsResponseTopicPartition) int16 { return p.ErrorCode })
		}},
		{"OffsetForLeaderEpoch", func() kmsg.Request {
			r := kmsg.NewPtrOffsetForLeaderEpochRequest()
			r.ReplicaID = -1
			rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
			rt.Topic = aclTopic
			rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			rp.CurrentLeaderEpoch, rp.LeaderEpoch = -1, 0
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		}, func(resp kmsg.Response) string {
			return partCodes(resp.(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions, func(p kmsg.OffsetForLeaderEpochResponseTopicPartition) int16 { return p.ErrorCode })
		}},
		{"Metadata named", func() kmsg.Request {
			r := kmsg.NewPtrMetadataRequest()
			r.Topics = topicReq(aclTopic)
			r.IncludeTopicAuthorizedOperations = true
			return r
		}, func(resp kmsg.Response) string {
			t := resp.(*kmsg.MetadataResponse).Topics[0]
			return fmt.Sprintf("%d ops=%d", t.ErrorCode, t.AuthorizedOperations)
		}},
		{"Metadata all", func() kmsg.Request {
			r := kmsg.NewPtrMetadataRequest()
			r.IncludeClusterAuthorizedOperations = true
			r.SetVersion(10)
			return r
		}, func(resp kmsg.Response) string {
			r := resp.(*kmsg.MetadataResponse)
			var names []string
			for _, t := range r.Topics {
				if strings.HasPrefix(*t.Topic, "acl-") {
					names = append(names, *t.Topic)
				}
			}
			sort.Strings(names)
			return fmt.Sprintf("%v cluster-ops=%d", names, r.AuthorizedOperations)
		}},
		{"Metadata auto-create", func() kmsg.Request {
			r := kmsg.NewPtrMetadataRequest()
			r.Topics = topicReq("other-auto")
			r.AllowAutoTopicCreation = true
			return r
		}, func(resp kmsg.Response) string {
			return strconv.Itoa(int(resp.(*kmsg.MetadataResponse).Topics[0].ErrorCode))
		}},
		{"OffsetCommit", func() kmsg.Request {
			r := kmsg.NewPtrOffsetCommitRequest()
			r.Group, r.Generation = aclGroup, -1
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic = aclTopic
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Offset = 1
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		}, func(resp kmsg.Response) string {
			return partCodes(resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions, func(p kmsg.OffsetCommitResponseTopicPartition) int16 { return p.ErrorCode })
		}},
		{"OffsetFetch", func() kmsg.Request {
			r := kmsg.NewPtrOffsetFetchRequest()
			g := kmsg.NewOffsetFetchRequestGroup()
			g.Group = aclGroup
			r.Groups = append(r.Groups, g)
			return r
		}, func(resp kmsg.Response) string {
			g := resp.(*kmsg.OffsetFetchResponse).Groups[0]
			return fmt.Sprintf("%d topics=%d", g.ErrorCode, len(g.Topics))
		}},
		{"FindCoordinator group", func() kmsg.Request {
			r := kmsg.NewPtrFindCoordinatorRequest()
			r.CoordinatorKeys = []string{aclGroup}
			return r
		}, func(resp kmsg.Response) string {
			return strconv.Itoa(int(resp.(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode))
		}},
		{"FindCoordinator txn", func() kmsg.Request {
			r := kmsg.NewPtrFindCoordinatorRequest()
			r.CoordinatorType, r.CoordinatorKeys = 1, []string{aclTxn}
			return r
		}, func(resp kmsg.Response) string {
			return strconv.Itoa(int(resp.(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode))
		}},
		{"JoinGroup", func() kmsg.Request {
			r := kmsg.NewPtrJoinGroupRequest()
			r.Group, r.SessionTimeoutMillis, r.RebalanceTimeoutMillis, r.ProtocolType = aclJoinGroup, 30000, 30000, "consumer"
			p := kmsg.NewJoinGroupRequestProtocol()
			p.Name, p.Metadata = "range", []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
			r.Protocols = append(r.Protocols, p)
			return r
		}, func(resp kmsg.Response) string { return strconv.Itoa(int(resp.(*kmsg.JoinGroupResponse).ErrorCode)) }},
		{"Heartbeat", func() kmsg.Request {
			r := kmsg.NewPtrHeartbeatRequest()
			r.Group, r.MemberID, r.Generation = aclJoinGroup, "nobody", 1
			return r
		}, func(resp kmsg.Response) string { return strconv.Itoa(int(resp.(*kmsg.HeartbeatResponse).ErrorCode)) }},
		{"SyncGroup", func() kmsg.Request {
			r := kmsg.NewPtrSyncGroupRequest()
			r.Group, r.MemberID, r.Generation = aclJoinGroup, "nobody", 1
			r.ProtocolType, r.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
			return r
		}, func(resp kmsg.Response) string { return strconv.Itoa(int(resp.(*kmsg.SyncGroupResponse).ErrorCode)) }},
		{"SyncGroup without protocol", func() kmsg.Request {
			r := kmsg.NewPtrSyncGroupRequest()
			r.Group, r.MemberID, r.Generation = aclJoinGroup, "nobody", 1
			return r
		}, func(resp kmsg.Response) string { return strconv.Itoa(int(resp.(*kmsg.SyncGroupResponse).ErrorCode)) }},
		{"LeaveGroup", func() kmsg.Request {
			r := kmsg.NewPtrLeaveGroupRequest()
			r.Group = aclJoinGroup
			m := kmsg.NewLeaveGroupRequestMember()
			m.MemberID = "nobody"
			r.Members = append(r.Members, m)
			return r
		}, func(resp kmsg.Response) string {
			r := resp.(*kmsg.LeaveGroupResponse)
			return fmt.Sprintf("%d/%s", r.ErrorCode, partCodes(r.Members, func(m kmsg.LeaveGroupResponseMember) int16 { return m.ErrorCode }))
		}},
		{"DescribeGroups", func() kmsg.Request {
			r := kmsg.NewPtrDescribeGroupsRequest()
			r.Groups, r.IncludeAuthorizedOperations = []string{aclGroup}, true
			return r
		}, func(resp kmsg.Response) string {
			g := resp.(*kmsg.DescribeGroupsResponse).Groups[0]
			return fmt.Sprintf("%d ops=%d", g.ErrorCode, g.AuthorizedOperations)
		}},
		{"ListGroups", func() kmsg.Request { return kmsg.NewPtrListGroupsRequest() }, func(resp kmsg.Response) string {
			var names []string
			for _, g := range resp.(*kmsg.ListGroupsResponse).Groups {
				names = append(names, g.Group)
			}
			sort.Strings(names)
			return fmt.Sprintf("%d %v", resp.(*kmsg.ListGroupsResponse).ErrorCode, names)
		}},
		{"OffsetDelete", func() kmsg.Request {
			r := kmsg.NewPtrOffsetDeleteRequest()
			r.Group = aclGroup
			rt := kmsg.NewOffsetDeleteRequestTopic()
			rt.Topic = aclTopic
			rt.Partitions = append(rt.Partitions, kmsg.NewOffsetDeleteRequestTopicPartition())
			r.Topics = append(r.Topics, rt)
			return r
		}, func(resp kmsg.Response) string {
			r := resp.(*kmsg.OffsetDeleteResponse)
			out := strconv.Itoa(int(r.ErrorCode))
			for _, t := range r.Topics {
				out += "/" + partCodes(t.Partitions, func(p kmsg.OffsetDeleteResponseTopicPartition) int16 { return p.ErrorCode })
			}
			return out
		}},
		{"DeleteGroups", func() kmsg.Request {
			r := kmsg.NewPtrDeleteGroupsRequest()
			r.Groups = []string{aclGroup, "acl-other-group"}
			return r
		}, func(resp kmsg.Response) string {
			var out []string
			for _, g := range resp.(*kmsg.DeleteGroupsResponse).Groups {
				out = append(out, fmt.Sprintf("%s=%d", g.Group, g.ErrorCode))
			}
			sort.Strings(out)
			return strings.Join(out, " ")
		}},
		{"ConsumerGroupHeartbeat", func() kmsg.Request {
			r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			r.Group, r.MemberID, r.MemberEpoch, r.RebalanceTimeoutMillis = "acl-g848", "m-acl-1234567890123456", 0, 30000
			r.SubscribedTopicNames = []string{aclTopic}
			r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			return r
		}, func(resp kmsg.Response) string {
			return strconv.Itoa(int(resp.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode))
		}},
		{"InitProducerId idempotent", func() kmsg.Request {
			r := kmsg.NewPtrInitProducerIDRequest()
			r.TransactionTimeoutMillis = 60000
			return r
		}, func(resp kmsg.Response) string {
			return strconv.Itoa(int(resp.(*kmsg.InitProducerIDResponse).ErrorCode))
		}},
		{"InitProducerId transactional", func() kmsg.Request {
			r := kmsg.NewPtrInitProducerIDRequest()
			r.TransactionalID, r.TransactionTimeoutMillis = kmsg.StringPtr(aclTxn), 60000
			return r
		}, func(resp kmsg.Response) string {
			return strconv.Itoa(int(resp.(*kmsg.InitProducerIDResponse).ErrorCode))
		}},
		{"AddPartitionsToTxn", func() kmsg.Request {
			r := kmsg.NewPtrAddPartitionsToTxnRequest()
			r.TransactionalID, r.ProducerID, r.ProducerEpoch = aclTxn, 999999, 0
			r.SetVersion(3)
			for _, topic := range []string{aclTopic, "other-topic"} {
				rt := kmsg.NewAddPartitionsToTxnRequestTopic()
				rt.Topic, rt.Partitions = topic, []int32{0}
				r.Topics = append(r.Topics, rt)
			}
			return r
		}, func(resp kmsg.Response) string {
			var out []string
			for _, t := range resp.(*kmsg.AddPartitionsToTxnResponse).Topics {
				out = append(out, fmt.Sprintf("%s=%d", t.Topic, t.Partitions[0].ErrorCode))
			}
			sort.Strings(out)
			return strings.Join(out, " ")
		}},
		{"AddOffsetsToTxn", func() kmsg.Request {
			r := kmsg.NewPtrAddOffsetsToTxnRequest()
			r.TransactionalID, r.ProducerID, r.Group = aclTxn, 999999, "other-group"
			return r
		}, func(resp kmsg.Response) string {
			return strconv.Itoa(int(resp.(*kmsg.AddOffsetsToTxnResponse).ErrorCode))
		}},
		{"EndTxn", func() kmsg.Request {
			r := kmsg.NewPtrEndTxnRequest()
			r.TransactionalID, r.ProducerID = aclTxn, 999999
			return r
		}, func(resp kmsg.Response) string { return strconv.Itoa(int(resp.(*kmsg.EndTxnResponse).ErrorCode)) }},
		{"TxnOffsetCommit", func() kmsg.Request {
			r := kmsg.NewPtrTxnOffsetCommitRequest()
			r.TransactionalID, r.Group, r.ProducerID = aclTxn, aclGroup, 999999
			rt := kmsg.NewTxnOffsetCommitRequestTopic()
			rt.Topic = aclTopic
			rt.Partitions = append(rt.Partitions, kmsg.NewTxnOffsetCommitRequestTopicPartition())
			r.Topics = append(r.Topics, rt)
			return r
		}, func(resp kmsg.Response) string {
			return partCodes(resp.(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions, func(p kmsg.TxnOffsetCommitResponseTopicPartition) int16 { return p.ErrorCode })
		}},
		{"DescribeProducers", func() kmsg.Request {
			r := kmsg.NewPtrDescribeProducersRequest()
			rt := kmsg.NewDescribeProducersRequestTopic()
			rt.Topic, rt.Partitions = aclTopic, []int32{0}
			r.Topics = append(r.Topics, rt)
			return r
		}, func(resp kmsg.Response) string {
			return partCodes(resp.(*kmsg.DescribeProducersResponse).Topics[0].Partitions, func(p kmsg.DescribeProducersResponseTopicPartition) int16 { return p.ErrorCode })
		}},
		{"DescribeTransactions", func() kmsg.Request {
			r := kmsg.NewPtrDescribeTransactionsRequest()
			r.TransactionalIDs = []string{aclTxn}
			return r
		}, func(resp kmsg.Response) string {
			return strconv.Itoa(int(resp.(*kmsg.DescribeTransactionsResponse).TransactionStates[0].ErrorCode))
		}},
		{"ListTransactions", func() kmsg.Request { return kmsg.NewPtrListTransactionsRequest() }, func(resp kmsg.Response) string {
			var ids []string
			for _, s := range resp.(*kmsg.ListTransactionsResponse).TransactionStates {
				ids = append(ids, s.TransactionalID)
			}
			sort.Strings(ids)
			return fmt.Sprintf("%d %v", resp.(*kmsg.ListTransactionsResponse).ErrorCode, ids)
		}},
		{"CreateTopics", func() kmsg.Request {
			r := kmsg.NewPtrCreateTopicsRequest()
			for _, name := range []string{"acl-new", "other-new"} {
				tt := kmsg.NewCreateTopicsRequestTopic()
				tt.Topic, tt.NumPartitions, tt.ReplicationFactor = name, 1, 1
				r.Topics = append(r.Topics, tt)
			}
			r.ValidateOnly = true
			return r
		}, func(resp kmsg.Response) string {
			var out []string
			for _, t := range resp.(*kmsg.CreateTopicsResponse).Topics {
				out = append(out, fmt.Sprintf("%s=%d", t.Topic, t.ErrorCode))
			}
			sort.Strings(out)
			return strings.Join(out, " ")
		}},
		{"CreatePartitions", func() kmsg.Request {
			r := kmsg.NewPtrCreatePartitionsRequest()
			rt := kmsg.NewCreatePartitionsRequestTopic()
			rt.Topic, rt.Count = aclTopic, 2
			r.Topics, r.ValidateOnly = append(r.Topics, rt), true
			return r
		}, func(resp kmsg.Response) string {
			return strconv.Itoa(int(resp.(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode))
		}},
		{"DeleteTopics", func() kmsg.Request {
			r := kmsg.NewPtrDeleteTopicsRequest()
			r.TopicNames = []string{"acl-missing", "other-missing"}
			r.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: kmsg.StringPtr("acl-missing")}, {Topic: kmsg.StringPtr("other-missing")}}
			r.TimeoutMillis = 5000
			return r
		}, func(resp kmsg.Response) string {
			var out []string
			for _, t := range resp.(*kmsg.DeleteTopicsResponse).Topics {
				out = append(out, fmt.Sprintf("%s=%d", *t.Topic, t.ErrorCode))
			}
			sort.Strings(out)
			return strings.Join(out, " ")
		}},
		{"DeleteRecords", func() kmsg.Request {
			r := kmsg.NewPtrDeleteRecordsRequest()
			rt := kmsg.NewDeleteRecordsRequestTopic()
			rt.Topic = aclTopic
			rp := kmsg.NewDeleteRecordsRequestTopicPartition()
			rp.Offset = 0
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics, r.TimeoutMillis = append(r.Topics, rt), 5000
			return r
		}, func(resp kmsg.Response) string {
			return partCodes(resp.(*kmsg.DeleteRecordsResponse).Topics[0].Partitions, func(p kmsg.DeleteRecordsResponseTopicPartition) int16 { return p.ErrorCode })
		}},
		{"DescribeConfigs", func() kmsg.Request {
			r := kmsg.NewPtrDescribeConfigsRequest()
			for _, res := range []struct {
				typ  kmsg.ConfigResourceType
				name string
			}{{kmsg.ConfigResourceTypeTopic, aclTopic}, {kmsg.ConfigResourceTypeBroker, "1"}} {
				rr := kmsg.NewDescribeConfigsRequestResource()
				rr.ResourceType, rr.ResourceName, rr.ConfigNames = res.typ, res.name, []string{"retention.ms", "log.retention.ms"}
				r.Resources = append(r.Resources, rr)
			}
			return r
		}, func(resp kmsg.Response) string {
			var out []string
			for _, r := range resp.(*kmsg.DescribeConfigsResponse).Resources {
				out = append(out, fmt.Sprintf("%s=%d", r.ResourceType, r.ErrorCode))
			}
			sort.Strings(out)
			return strings.Join(out, " ")
		}},
		{"IncrementalAlterConfigs", func() kmsg.Request {
			r := kmsg.NewPtrIncrementalAlterConfigsRequest()
			rr := kmsg.NewIncrementalAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, aclTopic
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Value = "retention.ms", kmsg.StringPtr("3600000")
			rr.Configs = append(rr.Configs, c)
			r.Resources, r.ValidateOnly = append(r.Resources, rr), true
			return r
		}, func(resp kmsg.Response) string {
			return strconv.Itoa(int(resp.(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode))
		}},
		{"AlterConfigs broker", func() kmsg.Request {
			r := kmsg.NewPtrAlterConfigsRequest()
			rr := kmsg.NewAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, ""
			r.Resources, r.ValidateOnly = append(r.Resources, rr), true
			return r
		}, func(resp kmsg.Response) string {
			return strconv.Itoa(int(resp.(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode))
		}},
		{"DescribeCluster", func() kmsg.Request {
			r := kmsg.NewPtrDescribeClusterRequest()
			r.IncludeClusterAuthorizedOperations = true
			return r
		}, func(resp kmsg.Response) string {
			r := resp.(*kmsg.DescribeClusterResponse)
			return fmt.Sprintf("%d ops=%d", r.ErrorCode, r.ClusterAuthorizedOperations)
		}},
		{"DescribeLogDirs", func() kmsg.Request { return kmsg.NewPtrDescribeLogDirsRequest() }, func(resp kmsg.Response) string {
			r := resp.(*kmsg.DescribeLogDirsResponse)
			return fmt.Sprintf("%d dirs>0=%v", r.ErrorCode, len(r.Dirs) > 0)
		}},
		{"ElectLeaders", func() kmsg.Request {
			r := kmsg.NewPtrElectLeadersRequest()
			rt := kmsg.NewElectLeadersRequestTopic()
			rt.Topic, rt.Partitions = aclTopic, []int32{0}
			r.Topics, r.TimeoutMillis = append(r.Topics, rt), 5000
			return r
		}, func(resp kmsg.Response) string {
			r := resp.(*kmsg.ElectLeadersResponse)
			return fmt.Sprintf("%d/%s", r.ErrorCode, partCodes(r.Topics[0].Partitions, func(p kmsg.ElectLeadersResponseTopicPartition) int16 { return p.ErrorCode }))
		}},
		{"ListPartitionReassignments", func() kmsg.Request { return kmsg.NewPtrListPartitionReassignmentsRequest() }, func(resp kmsg.Response) string {
			return strconv.Itoa(int(resp.(*kmsg.ListPartitionReassignmentsResponse).ErrorCode))
		}},
		{"AlterPartitionAssignments", func() kmsg.Request {
			r := kmsg.NewPtrAlterPartitionAssignmentsRequest()
			rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
			rt.Topic = "other-missing"
			rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
			rt.Partitions = append(rt.Partitions, rp) // nil replicas: cancel
			r.Topics = append(r.Topics, rt)
			return r
		}, func(resp kmsg.Response) string {
			r := resp.(*kmsg.AlterPartitionAssignmentsResponse)
			return strconv.Itoa(int(r.ErrorCode))
		}},
		{"DescribeUserScramCredentials", func() kmsg.Request {
			// Users is a list, not null: Kafka 4.4 fails with a
			// NullPointerException, and closes the connection, when it
			// refuses a request for all users (FINDINGS.md).
			r := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
			r.Users = []kmsg.DescribeUserSCRAMCredentialsRequestUser{}
			return r
		}, func(resp kmsg.Response) string {
			return strconv.Itoa(int(resp.(*kmsg.DescribeUserSCRAMCredentialsResponse).ErrorCode))
		}},
		{"AlterUserScramCredentials", func() kmsg.Request {
			r := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
			d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
			d.Name, d.Mechanism = "nobody", 2
			r.Deletions = append(r.Deletions, d)
			return r
		}, func(resp kmsg.Response) string {
			return strconv.Itoa(int(resp.(*kmsg.AlterUserSCRAMCredentialsResponse).Results[0].ErrorCode))
		}},
		{"DescribeAcls", func() kmsg.Request {
			r := kmsg.NewPtrDescribeACLsRequest()
			r.ResourceType, r.ResourcePatternType = kmsg.ACLResourceTypeGroup, kmsg.ACLResourcePatternTypeAny
			r.Operation, r.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			return r
		}, func(resp kmsg.Response) string {
			r := resp.(*kmsg.DescribeACLsResponse)
			return fmt.Sprintf("%d resources=%d msg=%s", r.ErrorCode, len(r.Resources), messageKind(r.ErrorMessage))
		}},
		{"CreateAcls", func() kmsg.Request {
			r := kmsg.NewPtrCreateACLsRequest()
			r.Creations = append(r.Creations, aclBinding(kmsg.ACLResourceTypeUser, "User:nobody", kmsg.ACLResourcePatternTypeLiteral,
				"User:nobody", kmsg.ACLOperationDescribe, kmsg.ACLPermissionTypeAllow))
			return r
		}, func(resp kmsg.Response) string {
			r := resp.(*kmsg.CreateACLsResponse).Results[0]
			return fmt.Sprintf("%d msg=%s", r.ErrorCode, messageKind(r.ErrorMessage))
		}},
		{"DeleteAcls", func() kmsg.Request {
			r := kmsg.NewPtrDeleteACLsRequest()
			f := kmsg.NewDeleteACLsRequestFilter()
			f.ResourceType, f.ResourcePatternType, f.Operation, f.PermissionType = kmsg.ACLResourceTypeUser, kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			r.Filters = append(r.Filters, f)
			return r
		}, func(resp kmsg.Response) string {
			r := resp.(*kmsg.DeleteACLsResponse).Results[0]
			out := fmt.Sprintf("%d matched=%d msg=%s", r.ErrorCode, len(r.MatchingACLs), messageKind(r.ErrorMessage))
			for _, m := range r.MatchingACLs {
				out += " " + messageKind(m.ErrorMessage)
			}
			return out
		}},
	}
}

// aclMatrix runs every case as alice and as bob against addr.
func aclMatrix(t *testing.T, ctx context.Context, addr string) []string {
	aclSetup(t, ctx, addr)
	clients := map[string]*kgo.Client{"alice": aclClient(t, addr, "alice"), "bob": aclClient(t, addr, "bob")}
	var out []string
	for _, c := range aclCases() {
		for _, user := range []string{"bob", "alice"} {
			resp, err := send(ctx, clients[user], c.req())
			line := c.name + " as " + user + ": "
			if err != nil {
				line += "error " + err.Error()
			} else {
				line += c.codes(resp)
			}
			out = append(out, line)
		}
	}
	return out
}

// TestACLMatrix compares, API by API, what samsa and Kafka answer a
// principal with the ACLs the API needs and one without any.
//
// Each phase has a deadline of its own, generous for CI's two loaded
// cores (one context for the whole test ran out there): the set-up and
// matrix (Kafka creates its internal topics at the first FindCoordinator),
// the ACL API probe, the kafka-acls runs (a JVM start each) and the
// restart. The probe and the tool runs go at the same time: they touch
// principals of their own (carol; dave and erin on samsa only), which the
// probe's filters name.
func TestACLMatrix(t *testing.T) {
	samsaAddr, kafkaAddr, samsaBroker := startACLBrokers(t)
	ctx := testContext(t, 5*time.Minute)
	var samsa, kafka []string
	var wg sync.WaitGroup
	wg.Go(func() { samsa = aclMatrix(t, ctx, samsaAddr) })
	wg.Go(func() { kafka = aclMatrix(t, ctx, kafkaAddr) })
	wg.Wait()
	if t.Failed() {
		return
	}
	compareLines(t, kafka, samsa)
	if t.Failed() {
		return
	}
	// The ACL APIs themselves: validation of creations, each kind of
	// filter, and what deletions match. Meanwhile Kafka's kafka-acls tool
	// and franz-go's kadm against samsa.
	probeCtx, toolCtx := testContext(t, 3*time.Minute), testContext(t, 8*time.Minute)
	wg.Go(func() { samsa = aclAPIProbe(t, probeCtx, samsaAddr) })
	wg.Go(func() { kafka = aclAPIProbe(t, probeCtx, kafkaAddr) })
	wg.Go(func() { aclToolAndKadm(t, toolCtx, samsaAddr) })
	wg.Wait()
	if t.Failed() {
		return
	}
	compareLines(t, kafka, samsa)

	// The ACLs are replayed from the metadata log at restart: alice's
	// are still in force, bob still has none.
	samsaBroker.Stop(t)
	samsaBroker.Restart(t)
	ctx = testContext(t, 2*time.Minute)
	for _, c := range aclCases() {
		if c.name != "Metadata named" {
			continue
		}
		for user, want := range map[string]string{"alice": "0 ops=3576", "bob": "29 ops=-2147483648"} {
			resp, err := send(ctx, aclClient(t, samsaAddr, user), c.req())
			if err != nil || c.codes(resp) != want {
				got := ""
				if err == nil {
					got = c.codes(resp)
				}
				t.Errorf("after restart, Metadata as %s: %q %v, want %q", user, got, err, want)
			}
		}
	}
}

func compareLines(t *testing.T, kafka, samsa []string) {
	t.Helper()
	for i := range max(len(kafka), len(samsa)) {
		k, s := "(none)", "(none)"
		if i < len(kafka) {
			k = kafka[i]
		}
		if i < len(samsa) {
			s = samsa[i]
		}
		if knownACLDiff(k, s) {
			t.Logf("explained difference (FINDINGS.md): kafka %q, samsa %q", k, s)
		} else if k != s {
			t.Errorf("kafka: %s\n        samsa: %s", k, s)
		} else {
			t.Logf("same: %s", k)
		}
	}
}
