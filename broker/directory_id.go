package broker

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// newDirectoryID returns a random Kafka Uuid for meta.properties'
// directory.id: 16 random bytes in unpadded URL-safe base64, redrawn
// while it starts with '-' (Kafka avoids ids that read as a command-line
// flag) or is one of the reserved ids (the first 100 values, zero
// included).
func newDirectoryID() (string, error) {
	for {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", err
		}
		reserved := true
		for _, c := range b[:15] {
			reserved = reserved && c == 0
		}
		reserved = reserved && b[15] < 100
		s := base64.RawURLEncoding.EncodeToString(b[:])
		if !reserved && !strings.HasPrefix(s, "-") {
			return s, nil
		}
	}
}

// addDirectoryID gives an existing meta.properties (b, already parsed into
// props) a directory.id when it has none, as Kafka 3.7+ does on start:
// kafka-metadata-quorum add-controller reads the metadata log dir's
// directory.id, the id of the voter it adds.
func addDirectoryID(path string, b []byte, props map[string]string) error {
	if props["directory.id"] != "" {
		return nil
	}
	id, err := newDirectoryID()
	if err != nil {
		return err
	}
	text := string(b)
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	if err := writeFileSync(path, []byte(text+"directory.id="+id+"\n")); err != nil {
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
