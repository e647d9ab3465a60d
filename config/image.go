package config

import "strings"

// The container image does not bake KAFKA_LOG_DIRS in: it sets
// SAMSA_IMAGE_LOG_DIRS, the data path used when nothing else names one, so
// that a compose file written for another image keeps its volume:
//
//   - bitnami/kafka keeps data in /bitnami/kafka/data and compose files
//     mount a volume at /bitnami/kafka. When the environment has bitnami's
//     variables (KAFKA_CFG_*, KAFKA_KRAFT_CLUSTER_ID, BITNAMI_*), that path
//     is used.
//   - apache/kafka's docs and cp-kafka use /var/lib/kafka/data: the
//     image's SAMSA_IMAGE_LOG_DIRS.
//
// A log.dirs or log.dir given anywhere (file, KAFKA_LOG_DIRS,
// KAFKA_CFG_LOG_DIRS, --override) wins, as it would in those images.
const (
	imageLogDirsVar = "SAMSA_IMAGE_LOG_DIRS"
	bitnamiDataDir  = "/bitnami/kafka/data"
)

// imageLogDirs returns the log.dirs setting the image's defaults imply, if
// any: only inside the image (SAMSA_IMAGE_LOG_DIRS set) and only when no
// source names log.dirs or log.dir.
func imageLogDirs(environ []string, fileProps []property, env []envSetting, overrides []property) (envSetting, bool) {
	dflt, bitnami := "", false
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		switch {
		case name == imageLogDirsVar:
			dflt = value
		case strings.HasPrefix(name, "KAFKA_CFG_"), name == "KAFKA_KRAFT_CLUSTER_ID", strings.HasPrefix(name, "BITNAMI_"):
			bitnami = true
		}
	}
	if dflt == "" {
		return envSetting{}, false
	}
	given := func(k string) bool { return k == "log.dirs" || k == "log.dir" }
	for _, p := range fileProps {
		if given(p.Key) {
			return envSetting{}, false
		}
	}
	for _, p := range overrides {
		if given(p.Key) {
			return envSetting{}, false
		}
	}
	for _, e := range env {
		if given(e.Key) {
			return envSetting{}, false
		}
	}
	if bitnami {
		return envSetting{Var: imageLogDirsVar + " (bitnami layout)", Key: "log.dirs", Value: bitnamiDataDir}, true
	}
	return envSetting{Var: imageLogDirsVar, Key: "log.dirs", Value: dflt}, true
}
