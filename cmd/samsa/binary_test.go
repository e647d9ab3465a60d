package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/samsa-broker/samsa/compat-tests/harness"
)

// samsaBin runs the real binary and returns its exit code and stdout.
func samsaBin(t *testing.T, bin, stdin string, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errOut.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errOut.String()
	}
	t.Fatalf("running samsa %q: %v", args, err)
	return 0, "", ""
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestBinary drives the real binary as a compose file would: the broker is
// started with flags only (so it serves, as before the CLI existed) and its
// HTTP listener on; then `samsa health` is the healthcheck, an init step
// creates a topic, lines go through produce and consume, and /readyz and
// /metrics answer. After the broker stops, health fails with exit 1.
func TestBinary(t *testing.T) {
	bin := harness.Build(t)
	httpAddr := freeAddr(t)
	b := harness.Start(t, harness.Options{Overrides: map[string]string{"samsa.http.listener": httpAddr}})
	env := []string{"SAMSA_BROKERS=" + b.Addr}

	if code, out, _ := samsaBin(t, bin, "", nil, "--version"); code != 0 || !strings.HasPrefix(out, "samsa ") {
		t.Fatalf("--version: %d %q", code, out)
	}
	if code, out, errOut := samsaBin(t, bin, "", env, "health"); code != 0 {
		t.Fatalf("health: %d %q %q", code, out, errOut)
	}
	if code, _, errOut := samsaBin(t, bin, "", env, "topics", "create", "lines", "--partitions", "2"); code != 0 {
		t.Fatalf("topics create: %d %s", code, errOut)
	}
	if code, _, errOut := samsaBin(t, bin, "a\nb\nc\n", env, "produce", "lines", "--partition", "1"); code != 0 {
		t.Fatalf("produce: %d %s", code, errOut)
	}
	code, out, errOut := samsaBin(t, bin, "", env, "consume", "lines", "--partition", "1", "--from-beginning", "-n", "3", "--format", "json")
	if code != 0 {
		t.Fatalf("consume: %d %s", code, errOut)
	}
	var values []string
	dec := json.NewDecoder(strings.NewReader(out))
	for {
		var r recordJSON
		if err := dec.Decode(&r); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("consume output %q: %v", out, err)
		}
		values = append(values, r.Value+"@"+strconv.FormatInt(r.Offset, 10))
	}
	if strings.Join(values, " ") != "a@0 b@1 c@2" {
		t.Fatalf("consumed %v", values)
	}

	resp, err := http.Get("http://" + httpAddr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/readyz: %d", resp.StatusCode)
	}
	resp, err = http.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := `kafka_server_brokertopicmetrics_messagesin_total{topic="lines"} 3`; !strings.Contains(string(body), want) {
		t.Fatalf("/metrics lacks %s", want)
	}

	b.Stop(t)
	if code, out, _ := samsaBin(t, bin, "", env, "health", "--timeout", "2s"); code != 1 || !strings.HasPrefix(out, "unhealthy") {
		t.Fatalf("health of a stopped broker: %d %q", code, out)
	}
	if code, _, _ := samsaBin(t, bin, "", env, "topics", "list", "--timeout", "2s"); code != 1 {
		t.Fatalf("topics list of a stopped broker: exit %d, want 1", code)
	}
}
