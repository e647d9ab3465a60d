//go:build !linux

package broker

import "net"

const rawReadMin = 64 << 10

// rawReader: raw reads are for Linux only (rawread_linux.go).
type rawSocket struct{}

func rawReader(net.Conn) *rawSocket { return nil }

func rawRead(*rawSocket, []byte) (int, error) { panic("rawRead without a raw connection") }
