package harness

import (
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Node ports come from below Linux's ephemeral range (32768-60999 by
// default). A port the kernel picked for "127.0.0.1:0" and the harness
// closed again is back in that range: the next outgoing connection of any
// client in any test process may take it before the node binds it, and a
// parallel test may be handed it too ("address already in use", seen
// under load). Ports below the range are never given to outgoing
// connections; this process hands each one out once, starting at a random
// point so that the compat test packages running side by side rarely
// probe the same ports at the same time, and skips any that something
// else holds. A machine whose ephemeral range starts lower has the range
// end there (portRange); kafka-ref.sh and compat-tests/suites pick theirs
// from the same ports.
const (
	portLow  = 20000
	portHigh = 32000
)

var ports struct {
	mu        sync.Mutex
	next      int
	low, high int
}

// portRange is [portLow, portHigh) cut at the start of the machine's
// ephemeral range (/proc/sys/net/ipv4/ip_local_port_range) when that
// starts lower.
func portRange() (int, int) {
	low, high := portLow, portHigh
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return low, high
	}
	if f := strings.Fields(string(b)); len(f) > 0 {
		if eph, err := strconv.Atoi(f[0]); err == nil && eph > low+1000 && eph < high {
			high = eph
		}
	}
	return low, high
}

// errNoPort is returned when every port of the range was tried.
var errNoPort = errors.New("harness: no free port below the ephemeral range")

// pickPort returns a loopback port that is free now and that this process
// has not handed out before (until the range wraps).
func pickPort() (int, error) {
	ports.mu.Lock()
	defer ports.mu.Unlock()
	if ports.next == 0 {
		ports.low, ports.high = portRange()
		ports.next = ports.low + rand.IntN(ports.high-ports.low)
	}
	for range ports.high - ports.low {
		p := ports.next
		ports.next++
		if ports.next >= ports.high {
			ports.next = ports.low
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue
		}
		l.Close()
		return p, nil
	}
	return 0, errNoPort
}
