package broker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// TestAuthorizedCluster: a three-node cluster with the StandardAuthorizer
// whose broker (and inter-broker) listener is SASL_PLAINTEXT PLAIN, the
// brokers authenticating as User:broker, a super user. ACLs created on a
// node that is not the active controller are forwarded in an Envelope and
// authorized as the client; so is a CreateTopics; followers replicate with
// the inter-broker principal (an acks=all produce with
// min.insync.replicas=3 needs every follower's fetch to be authorized);
// a principal without ACLs is refused.
func TestAuthorizedCluster(t *testing.T) {
	c := startTestCluster(t, 3,
		"listener.security.protocol.map=PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"sasl.enabled.mechanisms=PLAIN",
		"sasl.mechanism.inter.broker.protocol=PLAIN",
		`listener.name.plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="broker-pw" user_broker="broker-pw" user_app="app-pw" user_bob="bob-pw";`,
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users=User:broker",
	)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ctrl := c.activeController(30 * time.Second)
	other := (ctrl + 1) % 3
	client := func(user, pw string, opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.addr(other)), kgo.SASL(plain.Auth{User: user, Pass: pw}.AsMechanism())}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	// direct sends req to the node that is not the active controller.
	direct := func(cl *kgo.Client, req kmsg.Request) kmsg.Response {
		t.Helper()
		var resp kmsg.Response
		if !poll(30*time.Second, func() bool {
			var err error
			resp, err = cl.SeedBrokers()[0].Request(ctx, req)
			return err == nil
		}) {
			t.Fatalf("%s to node %d: no answer", kmsg.NameForKey(req.Key()), other+1)
		}
		return resp
	}
	app := client("app", "app-pw")
	admin := client("broker", "broker-pw")

	createTopic := func(cl *kgo.Client) int16 {
		req := kmsg.NewPtrCreateTopicsRequest()
		tt := kmsg.NewCreateTopicsRequestTopic()
		tt.Topic, tt.NumPartitions, tt.ReplicationFactor = "secured", 3, 3
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = "min.insync.replicas", kmsg.StringPtr("3")
		tt.Configs = append(tt.Configs, cfg)
		req.Topics = append(req.Topics, tt)
		return direct(cl, req).(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode
	}
	if code := createTopic(app); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("CreateTopics without ACLs: %d, want TOPIC_AUTHORIZATION_FAILED", code)
	}
	ca := kmsg.NewPtrCreateACLsRequest()
	for _, op := range []kmsg.ACLOperation{kmsg.ACLOperationCreate, kmsg.ACLOperationWrite, kmsg.ACLOperationRead} {
		cr := kmsg.NewCreateACLsRequestCreation()
		cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = kmsg.ACLResourceTypeTopic, "secured", kmsg.ACLResourcePatternTypeLiteral
		cr.Principal, cr.Host, cr.Operation, cr.PermissionType = "User:app", "*", op, kmsg.ACLPermissionTypeAllow
		ca.Creations = append(ca.Creations, cr)
	}
	if r := direct(app, ca).(*kmsg.CreateACLsResponse); r.Results[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("CreateAcls by app: %+v", r.Results)
	}
	for _, r := range direct(admin, ca).(*kmsg.CreateACLsResponse).Results {
		if r.ErrorCode != 0 {
			t.Fatalf("CreateAcls by the super user through node %d: %d %v", other+1, r.ErrorCode, r.ErrorMessage)
		}
	}
	// The ACLs reach the node that forwarded them with the metadata log.
	if !poll(30*time.Second, func() bool { return createTopic(app) == 0 }) {
		t.Fatal("CreateTopics with CREATE on the topic never succeeded")
	}
	// Every node learns the ACLs from the metadata log at its own pace (as
	// on Kafka); the partition leaders the producer goes to must have them.
	for i := range 3 {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr(i)), kgo.SASL(plain.Auth{User: "broker", Pass: "broker-pw"}.AsMechanism()))
		if err != nil {
			t.Fatal(err)
		}
		da := kmsg.NewPtrDescribeACLsRequest()
		da.ResourceType, da.ResourcePatternType = kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeLiteral
		da.ResourceName = kmsg.StringPtr("secured")
		da.Operation, da.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		seen := poll(30*time.Second, func() bool {
			resp, err := cl.SeedBrokers()[0].Request(ctx, da)
			if err != nil {
				return false
			}
			r := resp.(*kmsg.DescribeACLsResponse)
			return r.ErrorCode == 0 && len(r.Resources) == 1 && len(r.Resources[0].ACLs) == 3
		})
		cl.Close()
		if !seen {
			t.Fatalf("node %d never listed the three ACLs of topic secured", i+1)
		}
	}
	producer := client("app", "app-pw", kgo.DefaultProduceTopic("secured"), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProduceRequestTimeout(20*time.Second))
	for i := range 9 {
		pctx, pcancel := context.WithTimeout(ctx, 60*time.Second)
		err := producer.ProduceSync(pctx, &kgo.Record{Partition: int32(i % 3), Value: []byte("v")}).FirstErr()
		pcancel()
		if err != nil {
			t.Fatalf("produce %d with acks=all and min.insync.replicas=3: %v", i, err)
		}
	}
	denied := client("bob", "bob-pw", kgo.DefaultProduceTopic("secured"), kgo.RecordRetries(1))
	if err := denied.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err == nil || !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce by bob: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
}
