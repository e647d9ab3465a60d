package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Exit codes of the subcommands, for scripts: 0 success, 1 the operation
// failed (an error from the broker, an unreachable broker, a health check
// that failed), 2 a bad command line.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
)

// defaultBootstrap is used without --bootstrap-server and SAMSA_BROKERS.
const defaultBootstrap = "localhost:9092"

// subcommand is one admin command: samsa <name> ...
type subcommand struct {
	name    string
	summary string
	run     func(c *cli, args []string) error
}

// subcommands is the dispatch table; `samsa <name>` for any other first
// argument (or none) serves a broker as before.
func subcommands() []subcommand {
	return []subcommand{
		{"topics", "create, list, describe, alter-configs or delete topics", runTopics},
		{"groups", "list, describe (with lag), reset-offsets or delete consumer groups", runGroups},
		{"produce", "write lines of stdin as records to a topic", runProduce},
		{"consume", "print records of a topic as lines on stdout", runConsume},
		{"cluster", "show the cluster id, the controller and the brokers", runCluster},
		{"health", "exit 0 when the broker answers Metadata listing itself (for healthchecks)", runHealth},
		{"users", "list, set or delete users' SCRAM credentials", runUsers},
	}
}

// cliUsage lists the subcommands, for `samsa --help`.
func cliUsage() string {
	var b strings.Builder
	b.WriteString("\nAdmin commands (over the Kafka protocol; --bootstrap-server or SAMSA_BROKERS, default " + defaultBootstrap + "):\n")
	for _, s := range subcommands() {
		fmt.Fprintf(&b, "  samsa %-8s %s\n", s.name, s.summary)
	}
	b.WriteString("  samsa --version  print the version\nRun `samsa <command> --help` for a command's flags.\n")
	return b.String()
}

// cli is the environment a subcommand runs in, so that tests can run it
// in-process.
type cli struct {
	ctx    context.Context
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
}

// usageError is a bad command line: exit code 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// errSilent is a failure already reported on stdout (a failed health
// check, a partial produce): exit 1 without another line.
var errSilent = errors.New("")

// dispatch runs a subcommand when args names one, or prints the version
// for `samsa version` or a --version among broker flags, and
// reports handled=false otherwise so that main serves a broker exactly as
// before.
func dispatch(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) (code int, handled bool) {
	if len(args) == 0 {
		return 0, false
	}
	if args[0] == "version" || slices.Contains(args, "--version") && !isSubcommand(args[0]) {
		fmt.Fprintln(stdout, versionString())
		return exitOK, true
	}
	for _, s := range subcommands() {
		if args[0] != s.name {
			continue
		}
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		c := &cli{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv}
		return c.exit(s.name, s.run(c, args[1:])), true
	}
	return 0, false
}

func isSubcommand(name string) bool {
	for _, s := range subcommands() {
		if s.name == name {
			return true
		}
	}
	return false
}

func (c *cli) exit(name string, err error) int {
	var ue usageError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, pflag.ErrHelp):
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(c.stderr, "samsa %s: %v\nRun `samsa %s --help` for usage.\n", name, err, name)
		return exitUsage
	case errors.Is(err, errSilent):
		return exitFailed
	}
	fmt.Fprintf(c.stderr, "samsa %s: %v\n", name, err)
	return exitFailed
}

// versionString is the module version and VCS revision the binary was
// built from.
func versionString() string {
	v, rev, modified := "(devel)", "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	out := "samsa " + v
	if rev != "" {
		out += " " + rev[:min(12, len(rev))]
		if modified {
			out += "-dirty"
		}
	}
	return out + " " + runtime.Version()
}

// common are the flags every subcommand takes.
type common struct {
	bootstrap     string
	format        string
	timeout       time.Duration
	commandConfig string
}

// flagSet returns a subcommand's flags with the common ones added.
func (c *cli) flagSet(name, usage string) (*pflag.FlagSet, *common) {
	fs := pflag.NewFlagSet("samsa "+name, pflag.ContinueOnError)
	fs.SortFlags = false
	fs.SetOutput(c.stderr)
	co := &common{}
	dflt := c.getenv("SAMSA_BROKERS")
	if dflt == "" {
		dflt = defaultBootstrap
	}
	fs.StringVarP(&co.bootstrap, "bootstrap-server", "b", dflt, "brokers to connect to, host:port,... (env SAMSA_BROKERS)")
	fs.StringVar(&co.format, "format", "table", "output format: table (aligned, for people) or json (for scripts)")
	fs.DurationVar(&co.timeout, "timeout", 30*time.Second, "give up after this long")
	fs.StringVar(&co.commandConfig, "command-config", c.getenv("SAMSA_COMMAND_CONFIG"), "Kafka client properties for TLS/SASL listeners (security.protocol, sasl.*, ssl.* PEM), as the Kafka tools take (env SAMSA_COMMAND_CONFIG)")
	fs.Usage = func() {
		fmt.Fprintf(c.stderr, "Usage: samsa %s %s\n\n%s", name, usage, fs.FlagUsages())
	}
	return fs, co
}

// parse parses args and checks the common flags.
func parse(fs *pflag.FlagSet, co *common, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	if co.format != "table" && co.format != "json" {
		return usagef("--format %q: want table or json", co.format)
	}
	if strings.TrimSpace(co.bootstrap) == "" {
		return usagef("--bootstrap-server is empty")
	}
	return nil
}

// parseNames parses args into fs and co and returns the names given as
// arguments and with a repeatable flag (flagged, read after the parse): a
// usage error when there are none (what names them in it).
func parseNames(fs *pflag.FlagSet, co *common, args []string, flagged *[]string, what string) ([]string, error) {
	if err := parse(fs, co, args); err != nil {
		return nil, err
	}
	names := topicNames(fs.Args(), *flagged)
	if len(names) == 0 {
		return nil, usagef("no %s given", what)
	}
	return names, nil
}

// client connects to the bootstrap brokers; kgo dials lazily, so an
// unreachable broker shows as the first request's error.
func (co *common) client(opts ...kgo.Opt) (*kgo.Client, error) {
	sec, err := securityOpts(co.commandConfig)
	if err != nil {
		return nil, err
	}
	opts = append(append([]kgo.Opt{kgo.SeedBrokers(co.bootstrapList()...), kgo.ClientID("samsa-cli"),
		kgo.DialTimeout(min(co.timeout, 10*time.Second)), kgo.RetryTimeout(co.timeout)}, sec...), opts...)
	return kgo.NewClient(opts...)
}

// bootstrapList splits --bootstrap-server.
func (co *common) bootstrapList() []string {
	var seeds []string
	for _, s := range strings.Split(co.bootstrap, ",") {
		if s = strings.TrimSpace(s); s != "" {
			seeds = append(seeds, s)
		}
	}
	return seeds
}

func (co *common) admin() (*kadm.Client, *kgo.Client, error) {
	cl, err := co.client()
	if err != nil {
		return nil, nil, err
	}
	return kadm.NewClient(cl), cl, nil
}

// adminSession opens an admin client for one subcommand with its context bounded by
// --timeout; done closes both.
func (c *cli) adminSession(co *common) (*kadm.Client, context.Context, func(), error) {
	adm, cl, err := co.admin()
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := c.withTimeout(co)
	return adm, ctx, func() { cancel(); cl.Close() }, nil
}

// withTimeout bounds one subcommand by --timeout.
func (c *cli) withTimeout(co *common) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.ctx, co.timeout)
}

// table writes aligned columns.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer, header ...string) *table {
	t := &table{tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	t.row(toAny(header)...)
	return t
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func (t *table) row(cells ...any) {
	for i, c := range cells {
		if i > 0 {
			fmt.Fprint(t.tw, "\t")
		}
		fmt.Fprint(t.tw, c)
	}
	fmt.Fprint(t.tw, "\n")
}

func (t *table) flush() error { return t.tw.Flush() }

// writeJSON writes v as one indented JSON document.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func int32List(ids []int32) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprint(id)
	}
	return strings.Join(parts, ",")
}

// keyValues parses repeated k=v flags.
func keyValues(flag string, items []string) (map[string]string, error) {
	out := map[string]string{}
	for _, it := range items {
		k, v, ok := strings.Cut(it, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, usagef("--%s %q: want key=value", flag, it)
		}
		out[strings.TrimSpace(k)] = v
	}
	return out, nil
}

// environ adapts os.Getenv for dispatch.
func environ(key string) string { return os.Getenv(key) }
