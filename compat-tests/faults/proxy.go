package faults

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ErrProxy is returned when the proxy network cannot start.
var ErrProxy = errors.New("faults: proxy network")

// ProxyNet is the fallback network for machines without network
// namespaces (not root, no ip(8)): every node listens on loopback ports of
// its own, and everything that reaches a node — its client listener, as
// advertised to clients and peers alike, and its controller listener, as
// named in controller.quorum.voters — goes through a TCP proxy in the test
// process. A proxy tells which node a connection comes from by the socket:
// it finds the client socket's inode in /proc/net/tcp and the node
// process holding it in /proc/<pid>/fd; connections from anything else
// (the test's clients) are never cut. A cut link stalls: the proxy stops
// forwarding both ways on every connection between the two nodes, new
// ones included, until the link heals, when the bytes held back flow on —
// what a blackhole route does to TCP (nothing is reset, nothing is lost).
// Unlike a blackhole a connect across a cut succeeds (the proxy accepts),
// but nothing goes through it. A link can also be slowed without being cut
// (Degrade; see Degradation).
type ProxyNet struct {
	n int

	mu struct {
		sync.Mutex
		// pidOf returns the pid of node i's process (0-based), 0 when
		// down; nil until SetPids.
		pidOf func(i int) int
		cut   [][]bool // cut[i][j]: node i's packets to node j are dropped
		// degrade holds the slowed links, by {from, to} (-1: clients).
		degrade map[[2]int]Degradation
		change  chan struct{}
		conns   map[*proxyConn]bool
		closed  bool
	}
	listeners []net.Listener
	wg        sync.WaitGroup
	// seeds numbers the shapers of forwarded directions.
	seeds atomic.Uint64
}

// proxyConn is one forwarded connection: from node src (-1: not a node)
// to node dst.
type proxyConn struct {
	src, dst   int
	down, up   net.Conn // accepted, dialed
	closeOnce  sync.Once
	closeBoth  func()
	gone       chan struct{} // closed by closeBoth
	forwarding sync.WaitGroup
}

// proxyTarget is one proxied listener: node dst's real address.
type proxyTarget struct {
	dst  int
	addr string
}

// NewProxyNet starts one proxy per target, listening on the given
// loopback addresses (front[k] forwards to targets[k]). Until SetPids no
// connection is told to come from a node.
func NewProxyNet(n int, front []net.Listener, targets []proxyTarget) *ProxyNet {
	p := &ProxyNet{n: n, listeners: front}
	p.mu.cut = make([][]bool, n)
	for i := range p.mu.cut {
		p.mu.cut[i] = make([]bool, n)
	}
	p.mu.change = make(chan struct{})
	p.mu.conns = make(map[*proxyConn]bool)
	for k, ln := range front {
		p.wg.Add(1)
		go p.serve(ln, targets[k])
	}
	return p
}

// SetPids tells the proxies how to find node i's process (0-based; 0
// when it is down).
func (p *ProxyNet) SetPids(pidOf func(i int) int) {
	p.mu.Lock()
	p.mu.pidOf = pidOf
	p.mu.Unlock()
}

func (p *ProxyNet) serve(ln net.Listener, t proxyTarget) {
	defer p.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go p.handle(c, t)
	}
}

func (p *ProxyNet) handle(down net.Conn, t proxyTarget) {
	defer p.wg.Done()
	up, err := net.Dial("tcp", t.addr)
	if err != nil {
		// The node is down: reset the connection, the nearest a proxy
		// that already accepted can come to a refused connect. A plain
		// close reads as an EOF during the client's first request, which
		// franz-go takes for a TLS mismatch and fails records with.
		if tc, ok := down.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		down.Close()
		return
	}
	pc := &proxyConn{src: p.sourceOf(down, t.dst), dst: t.dst, down: down, up: up, gone: make(chan struct{})}
	pc.closeBoth = func() {
		pc.closeOnce.Do(func() {
			close(pc.gone)
			down.Close()
			up.Close()
		})
	}
	p.mu.Lock()
	if p.mu.closed {
		p.mu.Unlock()
		pc.closeBoth()
		return
	}
	p.mu.conns[pc] = true
	p.mu.Unlock()
	pc.forwarding.Add(2)
	go p.pump(pc, down, up, pc.src, pc.dst)
	go p.pump(pc, up, down, pc.dst, pc.src)
	pc.forwarding.Wait()
	p.mu.Lock()
	delete(p.mu.conns, pc)
	p.mu.Unlock()
}

// pump copies from one side to the other, the link from node src to node
// dst (-1: a client): a reader reads chunks and stamps each with its
// release time (degraded links, Degrade), a writer writes them on in
// order at that time, holding each back while the connection's link is
// cut.
func (p *ProxyNet) pump(pc *proxyConn, from, to net.Conn, src, dst int) {
	defer pc.forwarding.Done()
	defer pc.closeBoth()
	sh := newShaper(p.seeds.Add(1))
	chunks := make(chan proxyChunk, 64)
	written := make(chan struct{})
	go func() {
		defer close(written)
		defer pc.closeBoth()
		for c := range chunks {
			if !waitUntil(c.at, pc.gone) || !p.waitOpen(pc) {
				return
			}
			if _, err := to.Write(c.b); err != nil {
				return
			}
		}
	}()
	defer func() { <-written }()
	defer close(chunks)
	for {
		buf := make([]byte, 32<<10)
		k, err := from.Read(buf)
		if k > 0 {
			c := proxyChunk{b: buf[:k], at: sh.release(time.Now(), k, p.link(src, dst))}
			select {
			case chunks <- c:
			case <-written:
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// proxyChunk is one read of a forwarded direction and when it may be
// written on.
type proxyChunk struct {
	b  []byte
	at time.Time
}

// link returns the degradation of the link from node src to node dst.
func (p *ProxyNet) link(src, dst int) Degradation {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.degrade[[2]int{src, dst}]
}

// Degrade implements Degrader: it applies to chunks read from now on.
func (p *ProxyNet) Degrade(from, to int, d Degradation) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.degrade == nil {
		p.mu.degrade = make(map[[2]int]Degradation)
	}
	if d.IsZero() {
		delete(p.mu.degrade, [2]int{from, to})
		return
	}
	p.mu.degrade[[2]int{from, to}] = d
}

// Restore implements Degrader.
func (p *ProxyNet) Restore() {
	p.mu.Lock()
	p.mu.degrade = nil
	p.mu.Unlock()
}

// waitOpen blocks while pc's link is cut; false when the network closed.
func (p *ProxyNet) waitOpen(pc *proxyConn) bool {
	for {
		p.mu.Lock()
		if p.mu.closed {
			p.mu.Unlock()
			return false
		}
		cut := pc.src >= 0 && (p.mu.cut[pc.src][pc.dst] || p.mu.cut[pc.dst][pc.src])
		change := p.mu.change
		p.mu.Unlock()
		if !cut {
			return true
		}
		<-change
	}
}

// Partition implements Network.
func (p *ProxyNet) Partition(groups [][]int) error {
	groupOf := make([]int, p.n)
	for i := range groupOf {
		groupOf[i] = -1
	}
	for g, members := range groups {
		for _, m := range members {
			groupOf[m] = g
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range p.n {
		for j := range p.n {
			p.mu.cut[i][j] = i != j && groupOf[i] >= 0 && groupOf[j] >= 0 && groupOf[i] != groupOf[j]
		}
	}
	close(p.mu.change)
	p.mu.change = make(chan struct{})
	return nil
}

// Heal implements Network.
func (p *ProxyNet) Heal() error { return p.Partition(nil) }

// Close stops the proxies and closes every forwarded connection.
func (p *ProxyNet) Close() {
	p.mu.Lock()
	if p.mu.closed {
		p.mu.Unlock()
		return
	}
	p.mu.closed = true
	close(p.mu.change)
	conns := make([]*proxyConn, 0, len(p.mu.conns))
	for c := range p.mu.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, ln := range p.listeners {
		ln.Close()
	}
	for _, c := range conns {
		c.closeBoth()
	}
	p.wg.Wait()
}

// sourceOf returns the node (0-based) whose process holds the other end
// of c, or -1: not a node (or not found).
func (p *ProxyNet) sourceOf(c net.Conn, dst int) int {
	ra, ok := c.RemoteAddr().(*net.TCPAddr)
	if !ok {
		return -1
	}
	la, ok := c.LocalAddr().(*net.TCPAddr)
	if !ok {
		return -1
	}
	p.mu.Lock()
	pidOf := p.mu.pidOf
	p.mu.Unlock()
	if pidOf == nil {
		return -1
	}
	inode := socketInode(ra.Port, la.Port)
	if inode == "" {
		return -1
	}
	want := "socket:[" + inode + "]"
	for i := range p.n {
		if i == dst {
			continue
		}
		pid := pidOf(i)
		if pid <= 0 {
			continue
		}
		if holdsSocket(pid, want) {
			return i
		}
	}
	return -1
}

// socketInode finds, in /proc/net/tcp and tcp6, the inode of the socket
// whose local port is local and remote port is remote.
func socketInode(local, remote int) string {
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		if ino := scanTCPTable(f, local, remote); ino != "" {
			return ino
		}
	}
	return ""
}

func scanTCPTable(path string, local, remote int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		fs := strings.Fields(sc.Text())
		if len(fs) < 10 {
			continue
		}
		if hexPort(fs[1]) == local && hexPort(fs[2]) == remote {
			return fs[9]
		}
	}
	return ""
}

func hexPort(addr string) int {
	_, port, ok := strings.Cut(addr, ":")
	if !ok {
		return -1
	}
	n, err := strconv.ParseInt(port, 16, 32)
	if err != nil {
		return -1
	}
	return int(n)
}

// holdsSocket reports whether process pid has an open fd on socket want
// ("socket:[inode]").
func holdsSocket(pid int, want string) bool {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	d, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer d.Close()
	for {
		names, err := d.Readdirnames(256)
		for _, name := range names {
			if target, err := os.Readlink(dir + "/" + name); err == nil && target == want {
				return true
			}
		}
		if err != nil {
			return false
		}
	}
}

// ProxyAvailable reports whether the proxy network can tell nodes apart
// here (it reads /proc).
func ProxyAvailable() bool {
	_, err := os.Stat("/proc/net/tcp")
	return err == nil
}
