//go:build !unix

package broker

// setSockRecvBuffer leaves the OS default where setsockopt on a raw fd is
// not portable (the accepted connections still get SetReadBuffer).
func setSockRecvBuffer(fd uintptr, bytes int) error { return nil }
