package broker

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"

	"github.com/samsa-broker/samsa/config"
)

// ErrBind reports a listener whose address cannot be bound at start.
var ErrBind = errors.New("broker: listener address unavailable")

// probeListeners binds and releases every configured listener with a fixed
// port before the node writes anything to its log dirs. A port already in use
// (another broker, a second samsa on the same compose host) is reported
// before meta.properties is written, so a failed first start never leaves a
// generated cluster id behind for the next start to inherit. The real bind
// happens moments later; a port taken in between still fails the start, only
// later (Go's listeners set SO_REUSEADDR, so the released port is free at
// once for us).
func probeListeners(listeners []config.Listener) error {
	for _, l := range listeners {
		if l.Port == 0 {
			continue
		}
		addr := net.JoinHostPort(l.Host, strconv.Itoa(l.Port))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("%w: listener %s (%s): %v; is another broker or process using the port? "+
				"Stop it or choose another port in listeners (KAFKA_LISTENERS)", ErrBind, l.Name, addr, err)
		}
		ln.Close()
	}
	return nil
}

// explainFSError adds what to do to a file-system error of starting: the
// usual causes in containers are a volume owned by another user, a read-only
// mount and a full disk.
func explainFSError(err error, dirs []string) error {
	var pe *os.PathError
	path := fmt.Sprint(dirs)
	if errors.As(err, &pe) {
		path = pe.Path
	}
	switch {
	case errors.Is(err, os.ErrPermission):
		return fmt.Errorf("%w: samsa runs as uid %d, gid %d and cannot write %s; make the log dir writable for that user "+
			"(chown -R %d:%d <dir>, or in docker-compose mount a volume the image's user owns) or point log.dirs "+
			"(KAFKA_LOG_DIRS) at a writable directory", err, os.Getuid(), os.Getgid(), path, os.Getuid(), os.Getgid())
	case errors.Is(err, syscall.EROFS):
		return fmt.Errorf("%w: %s is on a read-only file system; mount the log dir read-write or point log.dirs "+
			"(KAFKA_LOG_DIRS) elsewhere", err, path)
	case errors.Is(err, syscall.ENOSPC):
		return fmt.Errorf("%w: the disk holding %s is full; free space (retention.ms/retention.bytes bound what "+
			"samsa keeps) or move log.dirs to a larger disk; no acknowledged data was removed", err, path)
	case errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("%w: a log dir path (%s) is a file, not a directory; fix log.dirs (KAFKA_LOG_DIRS)", err, path)
	}
	return err
}
