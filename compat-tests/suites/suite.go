package suites

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ErrSuitesNoModule is returned when a client's module is not in the module cache.
var ErrSuitesNoModule = errors.New("suites: module not in the module cache")

// ModuleDir returns the module cache directory of module mod at the version the
// go.mod of the module containing dir requires (`go list -m`).
func ModuleDir(dir, mod string) (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", mod)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("suites: go list -m %s: %w\n%s", mod, err, ee.Stderr)
		}
		return "", fmt.Errorf("suites: go list -m %s: %w", mod, err)
	}
	d := strings.TrimSpace(string(out))
	if d == "" {
		return "", fmt.Errorf("%w: %s (run go mod download)", ErrSuitesNoModule, mod)
	}
	return d, nil
}

// CopyModule copies the module tree src (read-only in the module cache) to dst,
// with files writable, so that `go test` can run in the copy.
func CopyModule(src, dst string) error {
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		return fmt.Errorf("suites: copying %s: %w", src, err)
	}
	return nil
}
