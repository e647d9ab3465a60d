package benchutil

import (
	"net"
	"testing"
)

func TestMedianColumnNum(t *testing.T) {
	runs := []map[string]float64{{"a": 3}, {"a": 1}, {"a": 2}, {"a": 10}}
	if got := Median(Column(runs, "a")); got != 2.5 {
		t.Errorf("median %v, want 2.5", got)
	}
	if got := Median(Column(runs[:3], "a")); got != 2 {
		t.Errorf("median of three %v, want 2", got)
	}
	if got := Column(nil, "a"); len(got) != 1 || got[0] != 0 {
		t.Errorf("column of no runs %v, want [0]", got)
	}
	for x, want := range map[float64]string{0: "0", 12345.6: "12346", 123.4: "123", 12.34: "12.3", 1.234: "1.23", 0.01234: "0.0123"} {
		if got := Num(x); got != want {
			t.Errorf("Num(%v) = %q, want %q", x, got, want)
		}
	}
}

func TestAPIVersionsOKRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	if APIVersionsOK(addr) {
		t.Fatal("a closed port answered")
	}
}

// TestLoadPhases runs a shell in samsa-load's place: its JSON lines are
// decoded by phase, other lines skipped; a bad JSON line or a failed run
// is an error.
func TestLoadPhases(t *testing.T) {
	type result struct {
		Phase string  `json:"phase"`
		MBps  float64 `json:"mbps"`
	}
	got, err := LoadPhases[result]("/bin/sh", "-c", `echo starting; echo '{"phase":"produce","mbps":12.5}'; echo; echo '{"phase":"consume","mbps":30}'`)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["produce"].MBps != 12.5 || got["consume"] != (result{"consume", 30}) {
		t.Fatalf("phases %+v", got)
	}
	if _, err := LoadPhases[result]("/bin/sh", "-c", `echo '{"phase":'`); err == nil {
		t.Fatal("no error for a bad JSON line")
	}
	if _, err := LoadPhases[result]("/bin/sh", "-c", "exit 3"); err == nil {
		t.Fatal("no error for a failed run")
	}
}
