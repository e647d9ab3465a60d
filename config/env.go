package config

import (
	"sort"
	"strings"
)

// envSetting is a setting found in the environment.
type envSetting struct {
	Var   string // the variable's name, for messages
	Key   string // the Kafka setting name
	Value string
}

// imagePlumbing are KAFKA_* variables read by the apache/kafka and bitnami
// images' scripts (JVM, logging, image version), not broker settings. They are
// skipped silently.
var imagePlumbing = map[string]bool{
	"KAFKA_HEAP_OPTS": true, "KAFKA_JVM_PERFORMANCE_OPTS": true, "KAFKA_OPTS": true,
	"KAFKA_LOG4J_OPTS": true, "KAFKA_JMX_OPTS": true, "KAFKA_GC_LOG_OPTS": true,
	"KAFKA_VERSION": true, "KAFKA_HOME": true, "KAFKA_DEBUG": true, "KAFKA_JMX_PORT": true,
	"KAFKA_JMX_HOSTNAME": true, "KAFKA_LOG4J_LOGGERS": true, "KAFKA_LOG4J_ROOT_LOGLEVEL": true,
	"KAFKA_TOOLS_LOG4J_LOGLEVEL": true, "KAFKA_CLASSPATH": true, "KAFKA_JAVA_OPTS": true,
	"KAFKA_URL": true, "KAFKA_SERVER_PROPERTIES": true,
	// bitnami image variables that are not KAFKA_CFG_*.
	"KAFKA_ENABLE_KRAFT": true, "KAFKA_KRAFT_BOOTSTRAP_SCRIPTS_DIR": true, "KAFKA_CONF_FILE": true,
	"KAFKA_MOUNTED_CONF_DIR": true, "KAFKA_BASE_DIR": true, "KAFKA_VOLUME_DIR": true,
	"KAFKA_DATA_DIR": true, "KAFKA_CONF_DIR": true, "KAFKA_INITSCRIPTS_DIR": true,
	"KAFKA_DAEMON_USER": true, "KAFKA_DAEMON_GROUP": true, "KAFKA_SKIP_KRAFT_STORAGE_INIT": true,
	"KAFKA_CLIENT_USERS": true, "KAFKA_CLIENT_PASSWORDS": true, "KAFKA_CLIENT_LISTENER_NAME": true,
	"KAFKA_INTER_BROKER_USER": true, "KAFKA_INTER_BROKER_PASSWORD": true,
	"KAFKA_CONTROLLER_USER": true, "KAFKA_CONTROLLER_PASSWORD": true,
	"KAFKA_CERTIFICATE_PASSWORD": true, "KAFKA_TLS_TYPE": true, "KAFKA_TLS_CLIENT_AUTH": true,
	"KAFKA_ZOOKEEPER_PROTOCOL": true, "KAFKA_INITIAL_CONTROLLERS": true,
}

// envToKey maps a KAFKA_* or KAFKA_CFG_* variable name to a Kafka setting
// name the way the apache/kafka image does: strip the prefix, lower-case, and
// turn "___" into "-", "__" into "_" and "_" into ".". It returns ok false
// for variables that are not settings.
func envToKey(name string) (key string, ok bool) {
	if imagePlumbing[name] {
		return "", false
	}
	var rest string
	switch {
	case strings.HasPrefix(name, "KAFKA_CFG_"):
		rest = name[len("KAFKA_CFG_"):]
	case strings.HasPrefix(name, "KAFKA_"):
		rest = name[len("KAFKA_"):]
	default:
		return "", false
	}
	if rest == "" {
		return "", false
	}
	var b strings.Builder
	for i := 0; i < len(rest); {
		switch {
		case strings.HasPrefix(rest[i:], "___"):
			b.WriteByte('-')
			i += 3
		case strings.HasPrefix(rest[i:], "__"):
			b.WriteByte('_')
			i += 2
		case rest[i] == '_':
			b.WriteByte('.')
			i++
		default:
			b.WriteByte(rest[i])
			i++
		}
	}
	return strings.ToLower(b.String()), true
}

// KeyToEnv is the inverse of the image's mapping: the KAFKA_* variable that
// sets a Kafka setting.
func KeyToEnv(key string) string {
	r := strings.NewReplacer("-", "___", "_", "__", ".", "_")
	return "KAFKA_" + strings.ToUpper(r.Replace(key))
}

// envSettings picks the settings out of an environment given as KEY=VALUE
// strings. KAFKA_CFG_* (bitnami) wins over KAFKA_* for the same key, and
// CLUSTER_ID (apache/kafka) or KAFKA_KRAFT_CLUSTER_ID (bitnami) set
// cluster.id unless KAFKA_CLUSTER_ID or KAFKA_CFG_CLUSTER_ID does. skipped
// names the KAFKA_* variables that are not settings at all (image plumbing
// such as KAFKA_HEAP_OPTS, Kubernetes service variables), sorted.
func envSettings(environ []string) (settings []envSetting, skipped []string) {
	byKey := map[string]envSetting{}
	rank := map[string]int{}
	var order []string
	put := func(s envSetting, r int) {
		if old, ok := rank[s.Key]; ok && old > r {
			return
		}
		if _, ok := rank[s.Key]; !ok {
			order = append(order, s.Key)
		}
		byKey[s.Key], rank[s.Key] = s, r
	}
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		switch name {
		case "CLUSTER_ID", "KAFKA_KRAFT_CLUSTER_ID":
			put(envSetting{Var: name, Key: "cluster.id", Value: value}, 0)
			continue
		}
		if kubernetesServiceVar(name, value) || imagePlumbing[name] {
			skipped = append(skipped, name)
			continue
		}
		key, ok := envToKey(name)
		if !ok {
			continue
		}
		r := 1
		if strings.HasPrefix(name, "KAFKA_CFG_") {
			r = 2
		}
		put(envSetting{Var: name, Key: key, Value: value}, r)
	}
	settings = make([]envSetting, 0, len(order))
	for _, k := range order {
		settings = append(settings, byKey[k])
	}
	sort.Strings(skipped)
	return settings, skipped
}

// kubernetesServiceVar reports whether a variable is one that Kubernetes
// injects for a Service named "kafka" (KAFKA_SERVICE_HOST, KAFKA_PORT,
// KAFKA_PORT_9092_TCP_ADDR, ...). Those are not settings, and warning about
// them on every start would only be noise.
func kubernetesServiceVar(name, value string) bool {
	switch {
	case name == "KAFKA_SERVICE_HOST", strings.HasPrefix(name, "KAFKA_SERVICE_PORT"):
		return true
	case name == "KAFKA_PORT":
		return strings.Contains(value, "://")
	case strings.HasPrefix(name, "KAFKA_PORT_"):
		rest := name[len("KAFKA_PORT_"):]
		digits := 0
		for digits < len(rest) && rest[digits] >= '0' && rest[digits] <= '9' {
			digits++
		}
		if digits == 0 {
			return false
		}
		proto := rest[digits:]
		for _, p := range []string{"_TCP", "_UDP", "_SCTP"} {
			if strings.HasPrefix(proto, p) {
				return true
			}
		}
	}
	return false
}
