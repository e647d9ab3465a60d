package config

import "testing"

func TestParseHTTPListener(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		bad      bool
	}{
		{in: "", want: ""},
		{in: "  ", want: ""},
		{in: "localhost:9404", want: "localhost:9404"},
		{in: ":9404", want: ":9404"},
		{in: "0.0.0.0:9404", want: "0.0.0.0:9404"},
		{in: "http://127.0.0.1:0", want: "127.0.0.1:0"},
		{in: "HTTP://[::1]:9404", want: "[::1]:9404"},
		{in: "https://localhost:9404", bad: true},
		{in: "localhost", bad: true},
		{in: "localhost:99999", bad: true},
		{in: "localhost:http", bad: true},
		{in: "a b:1", bad: true},
	} {
		got, err := parseHTTPListener(tc.in)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("parseHTTPListener(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.bad)
		}
	}
}

// TestHTTPListenerSources sets samsa.http.listener from the environment, as
// a compose file would, and checks that a bad value refuses to start.
func TestHTTPListenerSources(t *testing.T) {
	c, err := Load(nil, []string{"KAFKA_SAMSA_HTTP_LISTENER=0.0.0.0:9404"})
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTPListener != "0.0.0.0:9404" || c.Sources["samsa.http.listener"] != SourceStatic {
		t.Fatalf("HTTPListener %q source %v", c.HTTPListener, c.Sources["samsa.http.listener"])
	}
	c, err = Load(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTPListener != "" {
		t.Fatalf("default HTTPListener %q, want off", c.HTTPListener)
	}
	if _, err := Load([]string{"--override", "samsa.http.listener=nohost"}, nil); err == nil {
		t.Fatal("bad samsa.http.listener accepted")
	}
}
