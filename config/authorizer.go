package config

import (
	"fmt"
	"strings"
)

// Authorization settings. samsa implements one authorizer, Kafka's
// StandardAuthorizer model (ACLs in the metadata log); naming any other
// class refuses to start, since a broker its operator believes protected by
// a custom authorizer must not serve everyone.

// StandardAuthorizerClass is the class name of Kafka's KRaft authorizer,
// the value of authorizer.class.name that turns authorization on.
const StandardAuthorizerClass = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

// Authorizer is the resolved authorization configuration.
type Authorizer struct {
	// Enabled: authorizer.class.name is StandardAuthorizerClass. When
	// false nothing is checked and the ACL APIs answer SECURITY_DISABLED.
	Enabled bool
	// SuperUsers are the principals of super.users ("User:admin"), allowed
	// every operation.
	SuperUsers []string
	// AllowEveryoneIfNoACLFound is allow.everyone.if.no.acl.found.
	AllowEveryoneIfNoACLFound bool
}

// AuthorizerPluginSetting reports whether name is a setting of the
// authorizer itself rather than of the broker (super.users,
// allow.everyone.if.no.acl.found): Kafka reads those from the authorizer
// plugin's configuration, and its DescribeConfigs of a broker does not
// list them.
func AuthorizerPluginSetting(name string) bool {
	return name == "super.users" || name == "allow.everyone.if.no.acl.found"
}

func decodeAuthorizer(d *decoder) Authorizer {
	return Authorizer{
		Enabled:                   strings.TrimSpace(d.str("authorizer.class.name")) == StandardAuthorizerClass,
		SuperUsers:                parseSuperUsers(d.str("super.users")),
		AllowEveryoneIfNoACLFound: d.boolean("allow.everyone.if.no.acl.found"),
	}
}

// parseSuperUsers splits super.users at semicolons, as Kafka does (a
// principal name may contain commas: User:CN=a,O=b).
func parseSuperUsers(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ";") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func validateAuthorizerClass(s string) error {
	switch strings.TrimSpace(s) {
	case "", StandardAuthorizerClass:
		return nil
	}
	return fmt.Errorf("%w: authorizer class %s cannot be loaded by samsa, which implements only %s (the ACLs of kafka-acls); refusing to start rather than serve clients without the authorization asked for",
		ErrUnsupported, strings.TrimSpace(s), StandardAuthorizerClass)
}

// validateSuperUsers checks each principal has a type and a name
// (Kafka's SecurityUtils.parseKafkaPrincipal).
func validateSuperUsers(s string) error {
	for _, p := range parseSuperUsers(s) {
		typ, name, ok := strings.Cut(p, ":")
		if !ok || typ == "" || name == "" {
			return fmt.Errorf("principal %q: want Type:name, as User:alice", p)
		}
	}
	return nil
}
