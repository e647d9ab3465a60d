package coordinator

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestShardPanicIsContained is the regression test for issue 11 item 6 on
// the group coordinator: work runs on the shard's goroutine, outside the
// connection's recover, so a panic in one group request stopped the whole
// process. The request is answered UNKNOWN_SERVER_ERROR and the shard
// keeps serving.
func TestShardPanicIsContained(t *testing.T) {
	c := newTestCoordinator(t, newLogs())
	s, code := c.shardFor("g")
	if code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	if code := s.call(t.Context(), func() { panic("test: group bug") }); code != kerr.UnknownServerError.Code {
		t.Fatalf("panicking work: code %d, want UNKNOWN_SERVER_ERROR", code)
	}
	ran := false
	if code := s.call(t.Context(), func() { ran = true }); code != 0 || !ran {
		t.Fatalf("after the panic: code %d ran %v", code, ran)
	}
}
