//go:build !linux

package broker

import (
	"net"
	"syscall"
)

const rawReadMin = 64 << 10

// rawReader: raw reads are for Linux only (rawread_linux.go).
func rawReader(net.Conn) syscall.RawConn { return nil }

func rawRead(syscall.RawConn, []byte) (int, error) { panic("rawRead without a raw connection") }
