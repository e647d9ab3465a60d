package controller

import (
	"bytes"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller/acl"
)

func testBinding(name string, pat kmsg.ACLResourcePatternType, principal string, op kmsg.ACLOperation) acl.Binding {
	return acl.Binding{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: name, PatternType: pat, Principal: principal,
		Host: "*", Operation: op, Permission: kmsg.ACLPermissionTypeAllow}
}

// TestCreateDeleteACLs follows Kafka's AclControlManager: creations are
// validated one by one, a duplicate succeeds without a second ACL,
// deletions list every ACL a filter matched, and an ACL matched by two
// filters is removed once.
func TestCreateDeleteACLs(t *testing.T) {
	c := newTestController(t, 1)
	defer c.Close()
	a := testBinding("orders", kmsg.ACLResourcePatternTypeLiteral, "User:alice", kmsg.ACLOperationRead)
	b := testBinding("ord", kmsg.ACLResourcePatternTypePrefixed, "User:bob", kmsg.ACLOperationWrite)
	bad := a
	bad.PatternType = kmsg.ACLResourcePatternTypeMatch
	got := c.CreateACLs([]acl.Binding{a, b, bad, a})
	want := []ACLResult{{}, {}, {ErrorCode: kerr.InvalidRequest.Code, Message: "Invalid patternType MATCH"}, {}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("create: %+v", got)
	}
	if n := c.Image().ACLs.Len(); n != 2 {
		t.Fatalf("%d ACLs, want 2", n)
	}
	any := acl.Filter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}
	if got := DescribeACLs(c.Image(), any); !reflect.DeepEqual(got, []acl.Binding{a, b}) {
		t.Fatalf("describe: %+v", got)
	}
	name := "orders"
	match := any
	match.PatternType, match.ResourceName = kmsg.ACLResourcePatternTypeMatch, &name
	unknown := any
	unknown.Operation = kmsg.ACLOperationUnknown
	del := c.DeleteACLs([]acl.Filter{match, any, unknown})
	if len(del) != 3 || !reflect.DeepEqual(del[0].Deleted, []acl.Binding{a, b}) || !reflect.DeepEqual(del[1].Deleted, []acl.Binding{a, b}) ||
		del[2].ErrorCode != kerr.InvalidRequest.Code || del[2].Message != "Unknown entryFilter." {
		t.Fatalf("delete: %+v", del)
	}
	if n := c.Image().ACLs.Len(); n != 0 {
		t.Fatalf("%d ACLs after delete", n)
	}
	if del := c.DeleteACLs([]acl.Filter{any}); del[0].ErrorCode != 0 || len(del[0].Deleted) != 0 {
		t.Fatalf("delete of nothing: %+v", del)
	}
}

// TestACLsSurviveRestartAndSnapshot: ACLs are replayed from the metadata
// log at start, and carried by snapshots.
func TestACLsSurviveRestartAndSnapshot(t *testing.T) {
	path := filepath.Join(t.TempDir(), "metadata.log")
	open := func() (*Controller, *FileLog) {
		l, err := OpenFileLog(path)
		if err != nil {
			t.Fatal(err)
		}
		c, err := New(Options{NodeID: 1, ClusterID: "c", Log: l, Rand: testRand(3), Logger: quietLogger})
		if err != nil {
			t.Fatal(err)
		}
		return c, l
	}
	c, l := open()
	a := testBinding("t", kmsg.ACLResourcePatternTypeLiteral, "User:alice", kmsg.ACLOperationRead)
	b := testBinding("u", kmsg.ACLResourcePatternTypeLiteral, "User:bob", kmsg.ACLOperationAll)
	if res := c.CreateACLs([]acl.Binding{a, b}); res[0].ErrorCode != 0 || res[1].ErrorCode != 0 {
		t.Fatalf("create: %+v", res)
	}
	name := "t"
	c.DeleteACLs([]acl.Filter{{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: &name, PatternType: kmsg.ACLResourcePatternTypeLiteral,
		Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}})
	want := c.Image()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	c2, l2 := open()
	defer l2.Close()
	got := c2.Image()
	if !reflect.DeepEqual(got.ACLs, want.ACLs) || !reflect.DeepEqual(got.ACLs.Bindings, []acl.Binding{b}) {
		t.Fatalf("after restart %+v, want %+v", got.ACLs, want.ACLs)
	}
	var buf bytes.Buffer
	if err := WriteSnapshot(&buf, got); err != nil {
		t.Fatal(err)
	}
	snap, err := ReadSnapshot(&buf, EmptyImage("c", 1))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(snap.ACLs, want.ACLs) {
		t.Fatalf("snapshot %+v, want %+v", snap.ACLs, want.ACLs)
	}
}
