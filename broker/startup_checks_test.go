package broker

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/samsa-broker/samsa/config"
)

// Regression (issue 17 item 5): a first start whose listener port was taken
// wrote meta.properties with a generated cluster id before the bind failed,
// so the next start inherited that id (and a compose CLUSTER_ID then
// disagreed with it). The bind is now checked before anything is written.
func TestStartBindFailureLeavesNoClusterID(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	dir := t.TempDir()
	cfg, err := config.Load([]string{"--override", "log.dirs=" + dir,
		"--override", "listeners=PLAINTEXT://" + busy.Addr().String()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := StartNode(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err == nil {
		n.Close(t.Context())
		t.Fatal("start succeeded on a port in use")
	}
	if !errors.Is(err, ErrBind) || !strings.Contains(err.Error(), busy.Addr().String()) {
		t.Fatalf("error does not name the busy listener: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "meta.properties")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("meta.properties written by a start that could not bind (stat: %v)", err)
	}
}

// Regression (issue 17 item 5): file-system errors at start named the file but
// not what to do about it.
func TestExplainFSError(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{&os.PathError{Op: "open", Path: "/var/lib/kafka/data/.lock", Err: syscall.EACCES}, "chown"},
		{&os.PathError{Op: "mkdir", Path: "/data", Err: syscall.EROFS}, "read-only"},
		{&os.PathError{Op: "write", Path: "/data/x", Err: syscall.ENOSPC}, "full"},
		{&os.PathError{Op: "mkdir", Path: "/data", Err: syscall.ENOTDIR}, "not a directory"},
	} {
		got := explainFSError(c.err, []string{"/data"})
		if !errors.Is(got, c.err.(*os.PathError).Err) || !strings.Contains(got.Error(), c.want) ||
			!strings.Contains(got.Error(), c.err.(*os.PathError).Path) {
			t.Errorf("%v: got %q, want it to wrap the cause, name the path and say %q", c.err, got, c.want)
		}
	}
	other := errors.New("x")
	if explainFSError(other, nil) != other {
		t.Error("an unrelated error was rewritten")
	}
}
