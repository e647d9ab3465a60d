package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestAuthorizerSettings: Kafka's StandardAuthorizer turns authorization
// on; any other class refuses to start naming it; super.users is split at
// semicolons and each entry needs a type; the defaults are Kafka's.
func TestAuthorizerSettings(t *testing.T) {
	c, err := Load(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Authorizer.Enabled || c.Authorizer.AllowEveryoneIfNoACLFound || len(c.Authorizer.SuperUsers) != 0 {
		t.Errorf("defaults: %+v", c.Authorizer)
	}
	c, err = Load(nil, []string{
		"KAFKA_AUTHORIZER_CLASS_NAME=" + StandardAuthorizerClass,
		"KAFKA_SUPER_USERS=User:admin; User:CN=broker,O=example",
		"KAFKA_ALLOW_EVERYONE_IF_NO_ACL_FOUND=true",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Authorizer{Enabled: true, SuperUsers: []string{"User:admin", "User:CN=broker,O=example"}, AllowEveryoneIfNoACLFound: true}
	if !reflect.DeepEqual(c.Authorizer, want) {
		t.Errorf("got %+v, want %+v", c.Authorizer, want)
	}
	if len(c.Warnings) != 0 {
		t.Errorf("warnings: %v", c.Warnings)
	}
	_, err = Load([]string{"--override", "authorizer.class.name=com.example.MyAuthorizer"}, nil)
	if !errors.Is(err, ErrInvalidValue) || !strings.Contains(err.Error(), "com.example.MyAuthorizer") || !strings.Contains(err.Error(), "refusing to start") {
		t.Errorf("other authorizer: %v", err)
	}
	for _, bad := range []string{"admin", "User:", ":admin"} {
		if _, err := Load(nil, []string{"KAFKA_SUPER_USERS=" + bad}); !errors.Is(err, ErrInvalidValue) {
			t.Errorf("super.users=%s: %v", bad, err)
		}
	}
}
