package broker

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// addDirectoryID gives an existing meta.properties (b, already parsed into
// props) a directory.id when it has none, as Kafka 3.7+ does on start:
// kafka-metadata-quorum add-controller reads the metadata log dir's
// directory.id, the id of the voter it adds.
func addDirectoryID(path string, b []byte, props map[string]string) error {
	if props["directory.id"] != "" {
		return nil
	}
	id, err := newDirectoryID() // log_dir_failure.go
	if err != nil {
		return err
	}
	text := string(b)
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	if err := writeFileSync(path, []byte(text+"directory.id="+id.String()+"\n")); err != nil {
		return fmt.Errorf("%s: adding directory.id: %w", path, err)
	}
	return syncDirOf(path)
}

func syncDirOf(path string) error {
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
