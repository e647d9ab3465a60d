package broker

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestControllerChannelCancel: a request to a peer that accepts the
// connection and never answers (a node behind a blackhole route looks
// the same once connected) ends when its context is cancelled, with the
// context's error, instead of at the request timeout: a replica fetcher
// retired while such a fetch was in flight used to hold the request (and
// the channel's lock, so the next fetcher for that node too) for up to
// controllerRequestTimeout (docs/DURABILITY.md finding 13).
func TestControllerChannelCancel(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c // held open, never answered
		}
	}()
	defer func() {
		for {
			select {
			case c := <-accepted:
				c.Close()
			default:
				return
			}
		}
	}()
	ch := &controllerChannel{nodeID: 1, leader: func() (int32, string) { return 2, ln.Addr().String() }}
	defer ch.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := ch.Request(ctx, kmsg.NewPtrApiVersionsRequest(), 3)
		done <- err
	}()
	select {
	case c := <-accepted: // the request is on the wire
		accepted <- c
	case <-time.After(time.Minute):
		t.Fatal("the channel never connected")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled request: %v, want context.Canceled", err)
		}
	case <-time.After(controllerRequestTimeout - 2*time.Second):
		t.Fatal("cancelled request still waiting near the request timeout")
	}
}
