package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// echoServer accepts connections and echoes what it reads until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); _ = c.Close() }()
		}
	}()
	return ln.Addr().String()
}

// roundTrip writes msg on c and reads it back.
func roundTrip(c net.Conn, msg string) (string, error) {
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.Write([]byte(msg)); err != nil {
		return "", err
	}
	buf := make([]byte, len(msg))
	_, err := io.ReadFull(c, buf)
	return string(buf), err
}

func post(t *testing.T, url string, body any) int {
	t.Helper()
	var b bytes.Buffer
	if body != nil {
		if err := json.NewEncoder(&b).Encode(body); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := http.Post(url, "application/json", &b)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// TestProxyAPI walks the API as Sarama's functional tests use it: a proxied
// round trip, a disabled proxy refusing connections, reset_peer resetting an
// open connection and new ones, and /reset undoing both.
func TestProxyAPI(t *testing.T) {
	upstream := echoServer(t)
	s, err := newServer([]proxySpec{{Name: "kafka1", Listen: "127.0.0.1:0", Upstream: upstream, Enabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.close)
	listen := s.get("kafka1").spec().Listen
	api := httptest.NewServer(s)
	t.Cleanup(api.Close)

	resp, err := http.Get(api.URL + "/proxies/kafka1")
	if err != nil {
		t.Fatal(err)
	}
	var got proxySpec
	err = json.NewDecoder(resp.Body).Decode(&got)
	_ = resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || got.Name != "kafka1" || !got.Enabled || got.Upstream != upstream {
		t.Fatalf("GET /proxies/kafka1: %d %+v %v", resp.StatusCode, got, err)
	}
	if code := post(t, api.URL+"/proxies/nope", proxySpec{Name: "nope"}); code != 404 {
		t.Fatalf("POST of an unknown proxy: %d, want 404", code)
	}

	c, err := net.Dial("tcp", listen)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if echo, err := roundTrip(c, "hello"); err != nil || echo != "hello" {
		t.Fatalf("proxied echo: %q %v", echo, err)
	}

	// reset_peer: the open connection gets a RST, and so does a new one.
	if code := post(t, api.URL+"/proxies/kafka1/toxics", toxic{Name: "r", Type: "reset_peer", Stream: "downstream", Toxicity: 1}); code != 200 {
		t.Fatalf("add reset_peer: %d", code)
	}
	if _, err := roundTrip(c, "again"); err == nil {
		t.Fatal("round trip on a reset connection succeeded")
	}
	c2, err := net.Dial("tcp", listen)
	if err == nil {
		_, err = roundTrip(c2, "x")
		_ = c2.Close()
	}
	// The reset shows as ECONNRESET, EPIPE or EOF depending on when it arrives.
	if err == nil {
		t.Fatal("a new connection under reset_peer echoed")
	}

	// /reset removes the toxic.
	if code := post(t, api.URL+"/reset", nil); code != 204 {
		t.Fatalf("POST /reset: %d", code)
	}
	c3, err := net.Dial("tcp", listen)
	if err != nil {
		t.Fatal(err)
	}
	if echo, err := roundTrip(c3, "back"); err != nil || echo != "back" {
		t.Fatalf("echo after reset: %q %v", echo, err)
	}

	// Disabled: the open connection is closed and new ones are refused.
	if code := post(t, api.URL+"/proxies/kafka1", proxySpec{Name: "kafka1", Enabled: false}); code != 200 {
		t.Fatalf("disable: %d", code)
	}
	if _, err := roundTrip(c3, "closed"); err == nil {
		t.Fatal("round trip on a disabled proxy's connection succeeded")
	}
	_ = c3.Close()
	if c4, err := net.Dial("tcp", listen); err == nil {
		_ = c4.Close()
		t.Fatal("a disabled proxy accepted a connection")
	}
	if code := post(t, api.URL+"/reset", nil); code != 204 {
		t.Fatalf("POST /reset: %d", code)
	}
	c5, err := net.Dial("tcp", listen)
	if err != nil {
		t.Fatal(err)
	}
	defer c5.Close()
	if echo, err := roundTrip(c5, "on"); err != nil || echo != "on" {
		t.Fatalf("echo after re-enable: %q %v", echo, err)
	}

	// latency: a round trip takes at least the downstream delay.
	if code := post(t, api.URL+"/proxies/kafka1/toxics", toxic{Type: "latency", Toxicity: 1, Attributes: map[string]int{"latency": 50}}); code != 200 {
		t.Fatalf("add latency: %d", code)
	}
	start := time.Now()
	if echo, err := roundTrip(c5, "slow"); err != nil || echo != "slow" {
		t.Fatalf("echo with latency: %q %v", echo, err)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("round trip with a 50 ms latency toxic took %v", d)
	}
	if code := post(t, api.URL+"/proxies/kafka1/toxics", toxic{Type: "slicer"}); code != 400 {
		t.Fatalf("unknown toxic: %d, want 400", code)
	}
}
