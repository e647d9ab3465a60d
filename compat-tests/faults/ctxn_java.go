package faults

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// ErrNoJava is returned when the Java transactional producer cannot run:
// no java or mvn, or compat-tests/java does not compile.
var ErrNoJava = errors.New("faults: no Java client")

// javaTxnClass is the Java client's transactional producer
// (compat-tests/java/src/main/java/samsa/compat/FaultsTxnProducer.java),
// speaking the same report lines as TestConfluentTxnChild's producer.
const javaTxnClass = "samsa.compat.FaultsTxnProducer"

var javaTxnBuild struct {
	once sync.Once
	cp   string
	err  error
}

// JavaTxnClasspath returns the classpath of compat-tests/java
// (kafka-clients 4.4.0), which .ci/run compiles before the tests; it runs
// `mvn -B -q compile` itself when the producer's class is missing or older
// than its source.
func JavaTxnClasspath() (string, error) {
	javaTxnBuild.once.Do(func() {
		if _, err := exec.LookPath("java"); err != nil {
			javaTxnBuild.err = fmt.Errorf("%w: %w", ErrNoJava, err)
			return
		}
		dir, err := filepath.Abs(filepath.Join("..", "java"))
		if err != nil {
			javaTxnBuild.err = fmt.Errorf("%w: %w", ErrNoJava, err)
			return
		}
		_, errCP := os.Stat(filepath.Join(dir, "target", "classpath.txt"))
		stale := errCP != nil
		// The transactional producer and the consume-transform-produce
		// member (FaultsCtpMember, eos_child.go).
		for _, name := range []string{"FaultsTxnProducer", "FaultsCtpMember"} {
			src, err1 := os.Stat(filepath.Join(dir, "src", "main", "java", "samsa", "compat", name+".java"))
			class, err2 := os.Stat(filepath.Join(dir, "target", "classes", "samsa", "compat", name+".class"))
			stale = stale || (err1 == nil && (err2 != nil || class.ModTime().Before(src.ModTime())))
		}
		if stale {
			if _, err := exec.LookPath("mvn"); err != nil {
				javaTxnBuild.err = fmt.Errorf("%w: %w", ErrNoJava, err)
				return
			}
			cmd := exec.Command("mvn", "-B", "-q", "compile")
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				javaTxnBuild.err = fmt.Errorf("%w: mvn compile: %w\n%s", ErrNoJava, err, out)
				return
			}
		}
		deps, err := os.ReadFile(filepath.Join(dir, "target", "classpath.txt"))
		if err != nil {
			javaTxnBuild.err = fmt.Errorf("%w: %w", ErrNoJava, err)
			return
		}
		javaTxnBuild.cp = filepath.Join(dir, "target", "classes") + string(os.PathListSeparator) + strings.TrimSpace(string(deps))
	})
	return javaTxnBuild.cp, javaTxnBuild.err
}
