package handlers

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestEveryAPIAuthorized: with an authorizer, every API the broker serves
// is checked, by Serve's table (authzCheck) or in its handler (the ACL
// APIs); the exceptions are the APIs Kafka serves before authentication
// and the controller-only ones (served on the controller listener, which
// samsa trusts as it trusts BrokerRegistration). A new API added to the
// table without a check fails here instead of being open to everyone.
func TestEveryAPIAuthorized(t *testing.T) {
	inHandler := map[kmsg.Key]bool{kmsg.DescribeACLs: true, kmsg.CreateACLs: true, kmsg.DeleteACLs: true, kmsg.DescribeTopicPartitions: true,
		// delegation tokens: CREATE_TOKENS, DESCRIBE_TOKENS and DESCRIBE
		// of DELEGATION_TOKEN in the handlers, owners and renewers by the
		// controller (38_create_delegation_token.go)
		kmsg.CreateDelegationToken: true, kmsg.RenewDelegationToken: true, kmsg.ExpireDelegationToken: true, kmsg.DescribeDelegationToken: true}
	open := map[kmsg.Key]bool{kmsg.ApiVersions: true, kmsg.SASLHandshake: true, kmsg.SASLAuthenticate: true}
	for _, e := range Table() {
		k := kmsg.Key(e.Key)
		if authzCheck(e.Key) != nil || inHandler[k] || open[k] || e.ControllerOnly {
			continue
		}
		t.Errorf("%s is served without an authorization check: add it to authzCheck (authz_*.go)", kmsg.NameForKey(e.Key))
	}
}
