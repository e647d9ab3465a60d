package txn

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestShardPanicIsContained is the regression test for issue 11 item 6 on
// the transaction coordinator: a panic in work on the shard goroutine
// stopped the process. It is answered UNKNOWN_SERVER_ERROR and the shard
// keeps serving.
func TestShardPanicIsContained(t *testing.T) {
	e := newEnv(t)
	s, code := e.c.shardFor("x")
	if code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	if code := s.call(t.Context(), func() { panic("test: txn bug") }); code != kerr.UnknownServerError.Code {
		t.Fatalf("panicking work: code %d, want UNKNOWN_SERVER_ERROR", code)
	}
	ran := false
	if code := s.call(t.Context(), func() { ran = true }); code != 0 || !ran {
		t.Fatalf("after the panic: code %d ran %v", code, ran)
	}
}
