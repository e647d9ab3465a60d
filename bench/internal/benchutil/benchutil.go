// Package benchutil holds what the benchmark commands (bench/compare,
// bench/replication) share: the machine's description for their tables,
// the median of repeated runs, how a figure is printed, the probe that a
// broker answers, and samsa-load's results.
package benchutil

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// LoadAvg is the 1, 5 and 15 minute load averages ("?" when unknown).
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// CPUModel is the CPU's model name ("?" when unknown).
func CPUModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

// Column is the figure key of each run ({0} when there are none).
func Column(runs []map[string]float64, key string) []float64 {
	var v []float64
	for _, r := range runs {
		v = append(v, r[key])
	}
	if len(v) == 0 {
		v = []float64{0}
	}
	return v
}

// Median is the median of v (not empty).
func Median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Num prints a figure with three significant digits.
func Num(x float64) string {
	switch {
	case x == 0:
		return "0"
	case x >= 100:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case x >= 10:
		return strconv.FormatFloat(x, 'f', 1, 64)
	case x >= 1:
		return strconv.FormatFloat(x, 'f', 2, 64)
	default:
		return strconv.FormatFloat(x, 'g', 3, 64)
	}
}

// APIVersionsOK reports whether addr answers an ApiVersions v0 request
// without an error.
func APIVersionsOK(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	req := []byte{0, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 7, 0xff, 0xff}
	if _, err := conn.Write(req); err != nil {
		return false
	}
	var resp [10]byte
	if _, err := io.ReadFull(conn, resp[:]); err != nil {
		return false
	}
	return binary.BigEndian.Uint32(resp[4:]) == 7 && binary.BigEndian.Uint16(resp[8:]) == 0
}

// LoadPhases runs samsa-load (bin) with args, which include -json, and
// returns its results by phase: each output line that is a JSON object
// decoded into a T, keyed by its "phase" field. Other lines are skipped.
func LoadPhases[T any](bin string, args ...string) (map[string]T, error) {
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("samsa-load %v: %v\n%s", args, err, out)
	}
	res := map[string]T{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var r T
		var phase struct {
			Phase string `json:"phase"`
		}
		if err := json.Unmarshal(line, &r); err != nil {
			return nil, fmt.Errorf("samsa-load output %q: %w", line, err)
		}
		if err := json.Unmarshal(line, &phase); err != nil {
			return nil, fmt.Errorf("samsa-load output %q: %w", line, err)
		}
		res[phase.Phase] = r
	}
	return res, nil
}
