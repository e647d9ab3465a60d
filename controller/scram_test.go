package controller

import (
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestAlterUserScramCredentials follows Kafka's ScramControlManager: each
// user's operations succeed or fail together, with Kafka's error codes.
func TestAlterUserScramCredentials(t *testing.T) {
	c := newTestController(t, 1)
	defer c.Close()
	cred := ScramCredential{Salt: []byte("salt"), StoredKey: []byte("sk"), ServerKey: []byte("vk"), Iterations: 4096}
	got := c.AlterUserScramCredentials(nil, []ScramUpsertion{
		{Name: "alice", Mechanism: ScramSHA512, ScramCredential: cred},
		{Name: "zed", Mechanism: ScramSHA512, ScramCredential: cred},
		{Name: "zed", Mechanism: ScramSHA256, ScramCredential: cred},
		{Name: "bob", Mechanism: ScramSHA512, ScramCredential: ScramCredential{Salt: []byte("s"), StoredKey: []byte("k"), ServerKey: []byte("v"), Iterations: 100}},
		{Name: "carol", Mechanism: 7, ScramCredential: cred},
		{Name: "", Mechanism: ScramSHA256, ScramCredential: cred},
	})
	want := []ScramResult{
		{User: "alice"},
		{User: "zed", ErrorCode: kerr.DuplicateResource.Code, Message: "A user credential cannot be altered twice in the same request"},
		{User: "bob", ErrorCode: kerr.UnacceptableCredential.Code, Message: "Too few iterations"},
		{User: "carol", ErrorCode: kerr.UnsupportedSaslMechanism.Code, Message: "Unknown SCRAM mechanism"},
		{User: "", ErrorCode: kerr.UnacceptableCredential.Code, Message: "Username must not be empty"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	img := c.Image()
	if len(img.ScramCredentials) != 1 || !reflect.DeepEqual(img.ScramCredentials["alice"][ScramSHA512], cred) {
		t.Fatalf("image %+v", img.ScramCredentials)
	}
	if got := c.AlterUserScramCredentials(nil, []ScramUpsertion{{Name: "alice", Mechanism: ScramSHA256, ScramCredential: cred}}); got[0].ErrorCode != 0 {
		t.Fatalf("second mechanism: %+v", got)
	}

	// A failing deletion keeps the same user's upsertion out too; a
	// mechanism altered twice is DUPLICATE_RESOURCE.
	got = c.AlterUserScramCredentials(
		[]ScramDeletion{{Name: "alice", Mechanism: ScramSHA256}, {Name: "dave", Mechanism: ScramSHA256}, {Name: "erin", Mechanism: ScramSHA256}},
		[]ScramUpsertion{{Name: "dave", Mechanism: ScramSHA512, ScramCredential: cred}, {Name: "erin", Mechanism: ScramSHA256, ScramCredential: cred}})
	want = []ScramResult{
		{User: "alice"},
		{User: "dave", ErrorCode: kerr.ResourceNotFound.Code, Message: "Attempt to delete a user credential that does not exist"},
		{User: "erin", ErrorCode: kerr.ResourceNotFound.Code, Message: "Attempt to delete a user credential that does not exist"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	img = c.Image()
	if _, ok := img.ScramCredentials["dave"]; ok || len(img.ScramCredentials["alice"]) != 1 {
		t.Fatalf("image %+v", img.ScramCredentials)
	}
	got = c.AlterUserScramCredentials(nil, []ScramUpsertion{{Name: "x", Mechanism: ScramSHA256, ScramCredential: cred}, {Name: "x", Mechanism: ScramSHA256, ScramCredential: cred}})
	if len(got) != 1 || got[0].ErrorCode != kerr.DuplicateResource.Code {
		t.Fatalf("duplicate: %+v", got)
	}
	if _, ok := c.Image().ScramCredentials["x"]; ok {
		t.Fatal("duplicate applied")
	}
}
