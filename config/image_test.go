package config

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestImageLogDirs (issue 17 item 3): inside the image, data goes where the
// image being replaced kept it, unless a setting names the dir.
func TestImageLogDirs(t *testing.T) {
	img := "SAMSA_IMAGE_LOG_DIRS=/var/lib/kafka/data"
	for _, c := range []struct {
		name    string
		args    []string
		environ []string
		want    []string
	}{
		{"outside the image: samsa's own default", nil, nil, []string{"./samsa-data"}},
		{"apache/kafka or cp-kafka layout", nil, []string{img, "KAFKA_NODE_ID=1"}, []string{"/var/lib/kafka/data"}},
		{"bitnami layout", nil, []string{img, "KAFKA_CFG_NODE_ID=0", "ALLOW_PLAINTEXT_LISTENER=yes"}, []string{"/bitnami/kafka/data"}},
		{"bitnami cluster id alone", nil, []string{img, "KAFKA_KRAFT_CLUSTER_ID=abcdefghijklmnopqrstuv"}, []string{"/bitnami/kafka/data"}},
		{"KAFKA_LOG_DIRS wins", nil, []string{img, "KAFKA_CFG_NODE_ID=0", "KAFKA_LOG_DIRS=/tmp/kraft-combined-logs"}, []string{"/tmp/kraft-combined-logs"}},
		{"KAFKA_CFG_LOG_DIRS wins", nil, []string{img, "KAFKA_CFG_LOG_DIRS=/data/k"}, []string{"/data/k"}},
		{"log.dir in a flag wins", []string{"--override", "log.dir=/d"}, []string{img}, []string{"/d"}},
	} {
		cfg, err := Load(c.args, c.environ)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !reflect.DeepEqual(cfg.LogDirs, c.want) {
			t.Errorf("%s: log dirs %v, want %v", c.name, cfg.LogDirs, c.want)
		}
	}
}

// TestDockerfileDataPaths keeps the Dockerfile in step with imageLogDirs:
// the image sets SAMSA_IMAGE_LOG_DIRS (not KAFKA_LOG_DIRS, which would beat
// bitnami's layout) and creates both data paths for its user.
func TestDockerfileDataPaths(t *testing.T) {
	data, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(data)
	for _, want := range []string{"SAMSA_IMAGE_LOG_DIRS=/var/lib/kafka/data", "/out/bitnami/kafka/data", "--chown=65532:65532 /out/bitnami /bitnami",
		"--chown=65532:65532 /out/data /var/lib/kafka/data", "USER 65532:65532"} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	if strings.Contains(df, "KAFKA_LOG_DIRS=") {
		t.Error("Dockerfile bakes KAFKA_LOG_DIRS in: it would override bitnami's data path")
	}
}
