package broker

import "net"

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
