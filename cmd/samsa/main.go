// Command samsa runs one samsa node: a Kafka-compatible broker and its
// metadata controller in one process.
//
//	samsa                                  # PLAINTEXT on localhost:9092, data in ./samsa-data
//	samsa --config server.properties       # Kafka's server.properties names
//	samsa --override log.dirs=/var/lib/samsa --override num.partitions=3
//
// KAFKA_* environment variables are read as the apache/kafka image reads
// them (KAFKA_ADVERTISED_LISTENERS -> advertised.listeners).
package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/samsa-broker/samsa/broker"
	"github.com/samsa-broker/samsa/broker/handlers"
	"github.com/samsa-broker/samsa/config"
	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/storage/vfs"
)

func main() {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if err := run(logger); err != nil {
		logger.Error("samsa stopped", "err", err)
		fmt.Fprintln(os.Stderr, "samsa:", err)
		os.Exit(1)
	}
}

func run(logger *slog.Logger) error {
	cfg, err := config.Load(os.Args[1:], os.Environ())
	if err != nil {
		if errors.Is(err, config.ErrHelp) {
			fmt.Fprintln(os.Stdout, config.Usage())
			return nil
		}
		return err
	}
	for _, k := range cfg.Ignored {
		logger.Warn("setting accepted but not implemented", "setting", k)
	}

	for _, dir := range cfg.LogDirs {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("log dir: %w", err)
		}
	}
	unlock, err := lockDirs(cfg.LogDirs)
	if err != nil {
		return err
	}
	defer unlock()
	clusterID, err := checkMetaProperties(cfg)
	if err != nil {
		return err
	}

	logs, err := storage.OpenManager(storage.ManagerOptions{
		FS:                     vfs.OS,
		Dirs:                   cfg.LogDirs,
		Now:                    time.Now,
		Logger:                 logger.With("component", "storage"),
		RetentionCheckInterval: time.Duration(cfg.LogRetentionCheckIntervalMs) * time.Millisecond,
		FlushCheckInterval:     flushCheckInterval(cfg),
		CheckpointInterval:     time.Minute,
	})
	if err != nil {
		return err
	}

	metaDir := filepath.Join(cfg.LogDirs[0], "__samsa_metadata")
	if err := os.MkdirAll(metaDir, 0o755); err != nil {
		return err
	}
	mlog, err := controller.OpenFileLog(filepath.Join(metaDir, "metadata.log"))
	if err != nil {
		return err
	}
	syncer := &broker.LogSyncer{NodeID: cfg.NodeID, Config: cfg, Logs: logs, Logger: logger.With("component", "logs")}
	ctrl, err := controller.New(controller.Options{
		NodeID:                   cfg.NodeID,
		ClusterID:                clusterID,
		Log:                      mlog,
		Now:                      time.Now,
		Rand:                     rand.Reader,
		Logger:                   logger.With("component", "controller"),
		DefaultPartitions:        cfg.NumPartitions,
		DefaultReplicationFactor: cfg.DefaultReplicationFactor,
		ValidateTopicConfig:      validateTopicConfig,
		OnChange:                 syncer.Apply,
	})
	if err != nil {
		return err
	}
	syncer.RemoveStray(ctrl.Image())

	adv := advertised(cfg)
	if err := ctrl.RegisterBroker(controller.Broker{ID: cfg.NodeID, Host: adv.Host, Port: int32(adv.Port)}); err != nil {
		return err
	}

	stopping := make(chan struct{})
	deps := &handlers.Deps{
		Config:     cfg,
		Controller: ctrl,
		Logs:       logs,
		Now:        time.Now,
		Logger:     logger.With("component", "handlers"),
		Stopping:   stopping,
	}
	deps.Init()

	var serveListeners []config.Listener
	for _, l := range cfg.Listeners {
		if !isControllerListener(cfg, l.Name) {
			serveListeners = append(serveListeners, l)
		}
	}
	srv, err := broker.New(broker.Options{Deps: deps, Listeners: serveListeners, MaxRequestBytes: cfg.SocketRequestMaxBytes, Logger: logger.With("component", "broker")})
	if err != nil {
		return err
	}
	srv.Serve()

	ctx, cancel := context.WithCancel(context.Background())
	var bg sync.WaitGroup
	bg.Add(1)
	go func() { defer bg.Done(); logs.Run(ctx) }()

	for i, a := range srv.Addrs() {
		fmt.Fprintf(os.Stdout, "samsa: node %d listening on %s://%s (advertised %s), data in %s\n",
			cfg.NodeID, serveListeners[i].Name, a, adv, strings.Join(cfg.LogDirs, ","))
	}

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	sig := <-sigs
	logger.Info("shutting down", "signal", sig.String())
	close(stopping)
	shutdownCtx, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		logger.Warn("connections did not finish in time", "err", err)
	}
	cancel()
	bg.Wait()
	if err := logs.Close(); err != nil {
		return fmt.Errorf("closing logs: %w", err)
	}
	if err := mlog.Close(); err != nil {
		return fmt.Errorf("closing metadata log: %w", err)
	}
	logger.Info("stopped cleanly")
	return nil
}

func validateTopicConfig(m map[string]string) (int16, string) {
	if err := config.ValidateTopicConfig(m); err != nil {
		var ce *config.ConfigError
		if errors.As(err, &ce) {
			return ce.Code, ce.Message
		}
		return 40, err.Error() // INVALID_CONFIG
	}
	return 0, ""
}

// flushCheckInterval is how often the background flusher looks for logs
// past their flush.ms: log.flush.scheduler.interval.ms, bounded so that a
// small flush.ms still works.
func flushCheckInterval(cfg *config.Config) time.Duration {
	ms := cfg.LogFlushSchedulerIntervalMs
	if ms <= 0 || ms > 1000 {
		ms = 1000
	}
	return time.Duration(ms) * time.Millisecond
}

func isControllerListener(cfg *config.Config, name string) bool {
	for _, n := range cfg.ControllerListenerNames {
		if strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}

// advertised is the listener clients are told to connect to: the first
// advertised listener that is not a controller listener, with an empty
// host replaced by the machine's host name as Kafka does.
func advertised(cfg *config.Config) config.Listener {
	for _, l := range cfg.AdvertisedListeners {
		if isControllerListener(cfg, l.Name) {
			continue
		}
		if l.Host == "" || l.Host == "0.0.0.0" || l.Host == "::" {
			if h, err := os.Hostname(); err == nil {
				l.Host = h
			} else {
				l.Host = "localhost"
			}
		}
		return l
	}
	return config.Listener{Name: "PLAINTEXT", Host: "localhost", Port: 9092}
}

// lockDirs takes an exclusive lock on each log dir (the .lock file, as
// Kafka), so two brokers never share a data dir.
func lockDirs(dirs []string) (func(), error) {
	var files []*os.File
	unlock := func() {
		for _, f := range files {
			syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
			f.Close()
		}
	}
	for _, d := range dirs {
		f, err := os.OpenFile(filepath.Join(d, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			unlock()
			return nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			unlock()
			return nil, fmt.Errorf("log dir %s is in use by another process: %w", d, err)
		}
		files = append(files, f)
	}
	return unlock, nil
}

// checkMetaProperties reads or writes meta.properties in every log dir, in
// Kafka's format (version=1, cluster.id, node.id), and returns the cluster
// id. A dir that belongs to another cluster or node is an error at start.
func checkMetaProperties(cfg *config.Config) (string, error) {
	clusterID := cfg.ClusterID
	var missing []string
	for _, d := range cfg.LogDirs {
		p := filepath.Join(d, "meta.properties")
		b, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			missing = append(missing, p)
			continue
		}
		if err != nil {
			return "", err
		}
		props := map[string]string{}
		for _, line := range strings.Split(string(b), "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			if k, v, ok := strings.Cut(line, "="); ok {
				props[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
		}
		if id := props["cluster.id"]; id != "" {
			if clusterID != "" && clusterID != id {
				return "", fmt.Errorf("%s: cluster.id %s does not match configured %s", p, id, clusterID)
			}
			clusterID = id
		}
		if n := props["node.id"]; n != "" && n != strconv.Itoa(int(cfg.NodeID)) {
			return "", fmt.Errorf("%s: node.id %s does not match configured node.id %d", p, n, cfg.NodeID)
		}
	}
	if clusterID == "" {
		var raw [16]byte
		if _, err := rand.Read(raw[:]); err != nil {
			return "", err
		}
		clusterID = base64.RawURLEncoding.EncodeToString(raw[:])
	}
	for _, p := range missing {
		text := fmt.Sprintf("#\n#%s\nnode.id=%d\nversion=1\ncluster.id=%s\n", time.Now().UTC().Format(time.RFC1123), cfg.NodeID, clusterID)
		if err := writeFileSync(p, []byte(text)); err != nil {
			return "", err
		}
	}
	return clusterID, nil
}

func writeFileSync(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
