package handlers

import (
	"slices"
	"strings"
)

// cordonedLogDirsRefusal is Kafka 4.4's check of a dynamic
// cordoned.log.dirs on the broker it is for: every entry but * must be
// one of the broker's log directories ("" when it is, or unset).
func cordonedLogDirsRefusal(logDirs []string, configs map[string]string) string {
	v, ok := configs["cordoned.log.dirs"]
	if !ok {
		return ""
	}
	var missing []string
	for _, e := range strings.Split(v, ",") {
		if e = strings.TrimSpace(e); e != "" && e != "*" && !slices.Contains(logDirs, e) {
			missing = append(missing, e)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return "requirement failed: All entries in cordoned.log.dirs must be present in log.dirs or log.dir. Missing entries : " + strings.Join(missing, ",")
}
