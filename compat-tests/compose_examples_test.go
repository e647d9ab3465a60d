package compattests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.yaml.in/yaml/v3"

	"github.com/samsa-broker/samsa/compat-tests/harness"
)

// composeFile is the part of a docker-compose file the example test reads.
type composeFile struct {
	Services map[string]composeService `yaml:"services"`
}

type composeService struct {
	Image       string    `yaml:"image"`
	Hostname    string    `yaml:"hostname"`
	Ports       []string  `yaml:"ports"`
	Environment yaml.Node `yaml:"environment"`
}

// env returns the service's environment block as KEY=VALUE strings; compose
// accepts a map or a list.
func (s composeService) env(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	switch s.Environment.Kind {
	case yaml.MappingNode:
		var m map[string]string
		if err := s.Environment.Decode(&m); err != nil {
			t.Fatal(err)
		}
		return m
	case yaml.SequenceNode:
		var l []string
		if err := s.Environment.Decode(&l); err != nil {
			t.Fatal(err)
		}
		for _, kv := range l {
			k, v, _ := strings.Cut(kv, "=")
			out[k] = v
		}
	}
	return out
}

// hostPort maps a published host port of the service to its container port
// ("29092:9092" -> 29092 => 9092).
func (s composeService) hostPort(p int) (int, bool) {
	for _, m := range s.Ports {
		h, c, ok := strings.Cut(strings.Trim(m, `"`), ":")
		if !ok {
			continue
		}
		hp, err1 := strconv.Atoi(h)
		cp, err2 := strconv.Atoi(c)
		if err1 == nil && err2 == nil && hp == p {
			return cp, true
		}
	}
	return 0, false
}

// endpointRE finds host:port endpoints in listener, voter and bootstrap
// values: after "//" (listeners), "@" (voters) or a list separator.
var endpointRE = regexp.MustCompile(`(//|@|^|,)([A-Za-z0-9._-]*):(\d+)`)

// composeAsProcesses turns each service of a compose file into the
// environment block of a local process. Every container has a network of
// its own, so (service, container port) pairs get distinct free loopback
// ports; host names of services and localhost (a published port, mapped back
// to its container port) become 127.0.0.1; log dirs are left to the
// harness. The result keeps every other variable exactly as the file has it.
func composeAsProcesses(t *testing.T, f composeFile) (nodes []harness.EnvNode, hostAddrs []string, names []string) {
	t.Helper()
	byHost := map[string]string{}
	for name, s := range f.Services {
		names = append(names, name)
		byHost[name] = name
		if s.Hostname != "" {
			byHost[s.Hostname] = name
		}
	}
	sort.Strings(names)
	type key struct {
		service string
		port    int
	}
	mapped := map[key]int{}
	var keys []key
	resolve := func(service, host string, port int) key {
		switch host {
		case "", "0.0.0.0", "localhost", "127.0.0.1", "::":
			if host == "localhost" || host == "127.0.0.1" {
				if cp, ok := f.Services[service].hostPort(port); ok {
					port = cp
				}
			}
			return key{service, port}
		}
		other, ok := byHost[host]
		if !ok {
			t.Fatalf("service %s names unknown host %q", service, host)
		}
		return key{other, port}
	}
	rewritten := map[string]map[string]string{}
	for _, name := range names {
		env := f.Services[name].env(t)
		for k, v := range env {
			if !strings.Contains(k, "LISTENERS") && !strings.Contains(k, "VOTERS") && !strings.Contains(k, "BOOTSTRAP_SERVERS") {
				continue
			}
			for _, m := range endpointRE.FindAllStringSubmatch(v, -1) {
				p, _ := strconv.Atoi(m[3])
				kk := resolve(name, m[2], p)
				if _, ok := mapped[kk]; !ok {
					mapped[kk] = 0
					keys = append(keys, kk)
				}
			}
		}
		rewritten[name] = env
	}
	ports := harness.FreePorts(t, len(keys))
	for i, kk := range keys {
		mapped[kk] = ports[i]
	}
	for _, name := range names {
		env := rewritten[name]
		var block []string
		for k, v := range env {
			if k == "KAFKA_LOG_DIRS" || k == "KAFKA_CFG_LOG_DIRS" {
				continue // the harness gives each process a temporary dir
			}
			if strings.Contains(k, "LISTENERS") || strings.Contains(k, "VOTERS") || strings.Contains(k, "BOOTSTRAP_SERVERS") {
				v = endpointRE.ReplaceAllStringFunc(v, func(s string) string {
					m := endpointRE.FindStringSubmatch(s)
					p, _ := strconv.Atoi(m[3])
					return fmt.Sprintf("%s127.0.0.1:%d", m[1], mapped[resolve(name, m[2], p)])
				})
			}
			env[k] = v
			block = append(block, k+"="+v)
		}
		sort.Strings(block)
		// Ready address: the listener host clients use (advertised on
		// localhost), else the first advertised one, else (controller-only)
		// the controller listener.
		addr := ""
		adv := firstSet(env, "KAFKA_ADVERTISED_LISTENERS", "KAFKA_CFG_ADVERTISED_LISTENERS")
		orig := firstSet(f.Services[name].env(t), "KAFKA_ADVERTISED_LISTENERS", "KAFKA_CFG_ADVERTISED_LISTENERS")
		origParts := strings.Split(orig, ",")
		for i, l := range strings.Split(adv, ",") {
			if l == "" {
				continue
			}
			hp := l[strings.Index(l, "//")+2:]
			if addr == "" || (i < len(origParts) && strings.Contains(origParts[i], "//localhost:")) {
				addr = hp
			}
		}
		if addr != "" {
			hostAddrs = append(hostAddrs, addr)
		} else {
			ls := firstSet(env, "KAFKA_LISTENERS", "KAFKA_CFG_LISTENERS")
			addr = ls[strings.Index(ls, "//")+2:]
			if i := strings.IndexByte(addr, ','); i >= 0 {
				addr = addr[:i]
			}
		}
		nodes = append(nodes, harness.EnvNode{Env: block, Addr: addr})
	}
	return nodes, hostAddrs, names
}

func firstSet(env map[string]string, keys ...string) string {
	for _, k := range keys {
		if v, ok := env[k]; ok {
			return v
		}
	}
	return ""
}

// TestComposeExamples (issue 17 items 1, 2 and 6): the docker-compose files
// in examples/compose are the apache/kafka, bitnami and cp-kafka examples
// with only the image swapped. Each file's environment blocks, run as local
// processes, form one cluster with every service as a broker or controller;
// a client on the host bootstraps from the host listeners, is sent host
// addresses (not the compose-network names it cannot resolve), creates a
// topic replicated as widely as the cluster allows, and reads back what it
// wrote. Where docker exists, `docker compose config` validates the files.
func TestComposeExamples(t *testing.T) {
	files, err := filepath.Glob("../examples/compose/*.yml")
	if err != nil || len(files) < 5 {
		t.Fatalf("examples: %v %v", files, err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var f composeFile
			if err := yaml.Unmarshal(data, &f); err != nil {
				t.Fatal(err)
			}
			for name, s := range f.Services {
				if s.Image != "samsa:latest" {
					t.Errorf("service %s uses image %q, want samsa:latest", name, s.Image)
				}
			}
			// The docker CLI may be present without its compose plugin
			// (as on the CI machine): validate only where it works.
			if docker, err := exec.LookPath("docker"); err == nil && exec.Command(docker, "compose", "version").Run() == nil {
				if out, err := exec.Command(docker, "compose", "-f", file, "config", "-q").CombinedOutput(); err != nil {
					t.Errorf("docker compose config: %v\n%s", err, out)
				}
			}
			nodes, hostAddrs, names := composeAsProcesses(t, f)
			harness.StartEnvNodes(t, nodes)
			ctx := testContext(t, 90*time.Second)
			brokers := len(hostAddrs)

			// One cluster: every broker service is listed by every
			// broker, each with its host listener's address.
			if !pollUntil(60*time.Second, func() bool {
				for _, a := range hostAddrs {
					md, err := rawMetadata(ctx, a)
					if err != nil || len(md.Brokers) != brokers {
						return false
					}
					var got []string
					for _, b := range md.Brokers {
						got = append(got, fmt.Sprintf("%s:%d", b.Host, b.Port))
					}
					for _, want := range hostAddrs {
						if !slices.Contains(got, want) {
							return false
						}
					}
				}
				return true
			}) {
				md, err := rawMetadata(ctx, hostAddrs[0])
				t.Fatalf("services %v do not form one cluster of %d brokers answering with host addresses: %+v %v", names, brokers, md, err)
			}

			topic := "compose-" + strings.TrimSuffix(filepath.Base(file), ".yml")
			_, adm := newAdmin(t, hostAddrs[0])
			if _, err := adm.CreateTopic(ctx, 3, int16(min(brokers, 3)), nil, topic); err != nil {
				t.Fatalf("create %s: %v", topic, err)
			}
			cl, err := kgo.NewClient(kgo.SeedBrokers(hostAddrs...), kgo.ConsumeTopics(topic),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.RequiredAcks(kgo.AllISRAcks()))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			const n = 60
			for i := range n {
				if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
					t.Fatalf("produce %d: %v", i, err)
				}
			}
			seen := map[string]bool{}
			for len(seen) < n {
				fs := cl.PollFetches(ctx)
				if err := ctx.Err(); err != nil {
					t.Fatalf("consumed %d of %d: %v", len(seen), n, err)
				}
				fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
			}
		})
	}
}

// TestComposeRewrite checks the translation of compose endpoints to local
// processes on the single-node example: distinct ports per (service,
// container port), localhost mapped back through the published port.
func TestComposeRewrite(t *testing.T) {
	f := composeFile{Services: map[string]composeService{}}
	data := `
services:
  a:
    hostname: a-host
    ports: ["29092:9092"]
    environment:
      KAFKA_LISTENERS: "PLAINTEXT://:19092,CONTROLLER://:9093,PLAINTEXT_HOST://:9092"
      KAFKA_ADVERTISED_LISTENERS: "PLAINTEXT://a-host:19092,PLAINTEXT_HOST://localhost:29092"
      KAFKA_CONTROLLER_QUORUM_VOTERS: "1@a-host:9093,2@b:9093"
      KAFKA_LOG_DIRS: /x
  b:
    environment:
      - KAFKA_LISTENERS=CONTROLLER://:9093
      - KAFKA_CONTROLLER_QUORUM_VOTERS=1@a-host:9093,2@b:9093
`
	if err := yaml.Unmarshal([]byte(data), &f); err != nil {
		t.Fatal(err)
	}
	nodes, hostAddrs, _ := composeAsProcesses(t, f)
	get := func(n harness.EnvNode, k string) string {
		for _, kv := range n.Env {
			if key, v, _ := strings.Cut(kv, "="); key == k {
				return v
			}
		}
		return ""
	}
	a, b := nodes[0], nodes[1]
	if get(a, "KAFKA_LOG_DIRS") != "" {
		t.Error("KAFKA_LOG_DIRS kept")
	}
	ls := strings.Split(get(a, "KAFKA_LISTENERS"), ",")
	adv := strings.Split(get(a, "KAFKA_ADVERTISED_LISTENERS"), ",")
	port := func(s string) string { return s[strings.LastIndexByte(s, ':')+1:] }
	if port(ls[0]) != port(adv[0]) || port(ls[2]) != port(adv[1]) || port(ls[0]) == port(ls[2]) {
		t.Errorf("listeners %v and advertised %v do not line up", ls, adv)
	}
	if len(hostAddrs) != 1 || hostAddrs[0] != strings.TrimPrefix(adv[1], "PLAINTEXT_HOST://") || a.Addr != hostAddrs[0] {
		t.Errorf("host address %v, node addr %s, advertised %v", hostAddrs, a.Addr, adv)
	}
	voters := get(a, "KAFKA_CONTROLLER_QUORUM_VOTERS")
	if voters != get(b, "KAFKA_CONTROLLER_QUORUM_VOTERS") || !strings.Contains(voters, "@127.0.0.1:"+port(ls[1])) ||
		!strings.Contains(voters, "2@127.0.0.1:"+port(get(b, "KAFKA_LISTENERS"))) || port(ls[1]) == port(get(b, "KAFKA_LISTENERS")) {
		t.Errorf("voters %q, a listeners %v, b listeners %q", voters, ls, get(b, "KAFKA_LISTENERS"))
	}
	if b.Addr != strings.TrimPrefix(get(b, "KAFKA_LISTENERS"), "CONTROLLER://") {
		t.Errorf("controller-only node ready address %q", b.Addr)
	}
}
