//go:build unix

package broker

import "syscall"

// setSockRecvBuffer sets SO_RCVBUF of socket fd.
func setSockRecvBuffer(fd uintptr, bytes int) error {
	return syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, bytes)
}
