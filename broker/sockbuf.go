package broker

import (
	"net"
	"syscall"
)

// setSendBuffer sets SO_SNDBUF of an accepted connection to bytes
// (socket.send.buffer.bytes, Kafka's default 102400; <= 0 leaves the OS
// default), as Kafka's acceptor does. A connection that is not a socket
// (a test's pipe, a wrapper without SetWriteBuffer) keeps its own.
//
// Why it matters on Linux (issue 15): with the OS default the send buffer
// of a busy connection grows to tcp_wmem's maximum (4 MiB here), and a
// consumer reading large fetch responses over loopback cost itself and
// the broker more CPU per GB than with Kafka's fixed buffer
// (bench/README.md, "socket.send.buffer.bytes").
func setSendBuffer(nc net.Conn, bytes int) {
	if bytes <= 0 {
		return
	}
	if s, ok := nc.(interface{ SetWriteBuffer(int) error }); ok {
		// A failure leaves the OS default, which serves as well.
		s.SetWriteBuffer(bytes)
	}
}

// recvBufferControl returns the Control of a net.ListenConfig or
// net.Dialer that sets SO_RCVBUF to bytes before the socket binds or
// connects, as Kafka does: socket.receive.buffer.bytes on each listener's
// server socket, before bind, so that every connection it accepts has it
// from its handshake on (its TCP window scale is chosen then), and
// replica.socket.receive.buffer.bytes on the replica fetchers' sockets,
// before connect. nil (the OS default, which Linux autotunes up to
// tcp_rmem's maximum) when bytes <= 0; Kafka's -1. A failure leaves the
// OS default.
func recvBufferControl(bytes int) func(network, address string, c syscall.RawConn) error {
	if bytes <= 0 {
		return nil
	}
	return func(_, _ string, c syscall.RawConn) error {
		c.Control(func(fd uintptr) { setSockRecvBuffer(fd, bytes) })
		return nil
	}
}

// setRecvBuffer sets SO_RCVBUF of an accepted connection that did not
// come from a listener of this Server's own (the Kafka connections a
// controller's or a broker-only node's Raft listener hands over), so
// those get socket.receive.buffer.bytes too, if only after their
// handshake. <= 0 leaves the OS default.
func setRecvBuffer(nc net.Conn, bytes int) {
	if bytes <= 0 {
		return
	}
	if s, ok := nc.(interface{ SetReadBuffer(int) error }); ok {
		s.SetReadBuffer(bytes)
	}
}
