package harness

import (
	"errors"
	"math/rand/v2"
	"net"
	"strconv"
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
// else holds.
const (
	portLow  = 20000
	portHigh = 32000
)

var ports struct {
	mu   sync.Mutex
	next int
}

// errNoPort is returned when every port of the range was tried.
var errNoPort = errors.New("harness: no free port below the ephemeral range")

// pickPort returns a loopback port that is free now and that this process
// has not handed out before (until the range wraps).
func pickPort() (int, error) {
	ports.mu.Lock()
	defer ports.mu.Unlock()
	if ports.next == 0 {
		ports.next = portLow + rand.IntN(portHigh-portLow)
	}
	for range portHigh - portLow {
		p := ports.next
		ports.next++
		if ports.next >= portHigh {
			ports.next = portLow
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
