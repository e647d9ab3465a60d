//go:build !linux

package broker

import (
	"net"

	"github.com/samsa-broker/samsa/storage"
)

// rangeSender sends nothing outside Linux: every range is copied.
type rangeSender struct{}

func newRangeSender(net.Conn) *rangeSender { return nil }

func (s *rangeSender) done() {}

func (s *rangeSender) send(storage.FileSlice) (bool, error) { return false, nil }
