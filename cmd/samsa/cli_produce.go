package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// maxLine is the longest stdin line produce accepts (a record larger than
// the broker's message.max.bytes fails at the broker anyway).
const maxLine = 16 << 20

// runProduce is `samsa produce TOPIC`: one record per stdin line.
func runProduce(c *cli, args []string) error {
	fs, co := c.flagSet("produce", "TOPIC [flags] < lines")
	keySep := fs.StringP("key-separator", "K", "", "split each line at the first SEP into key and value (no separator: the line is the value)")
	partition := fs.Int32P("partition", "p", -1, "write every record to this partition (-1: the default partitioner)")
	headers := fs.StringArrayP("header", "H", nil, "header key=value added to every record (repeatable)")
	acks := fs.String("acks", "all", "acks: all, 1 or 0")
	topicFlag := fs.StringP("topic", "t", "", "topic (or give it as the argument)")
	progressEvery := fs.Duration("progress", 5*time.Second, "print progress to stderr this often while producing (0: never)")
	if err := parse(fs, co, args); err != nil {
		return err
	}
	topic, err := oneTopic(*topicFlag, fs.Args())
	if err != nil {
		return err
	}
	hdrs, err := keyValues("header", *headers)
	if err != nil {
		return err
	}
	var recHeaders []kgo.RecordHeader
	for k, v := range hdrs {
		recHeaders = append(recHeaders, kgo.RecordHeader{Key: k, Value: []byte(v)})
	}
	opts := []kgo.Opt{kgo.DefaultProduceTopic(topic), kgo.ProducerBatchMaxBytes(maxLine), kgo.RecordDeliveryTimeout(co.timeout)}
	switch *acks {
	case "all", "-1":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	default:
		return usagef("--acks %q: want all, 1 or 0", *acks)
	}
	if *partition >= 0 {
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}
	cl, err := co.client(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()

	var (
		mu       sync.Mutex
		produced int
		failed   int
		firstErr error
	)
	done := func(_ *kgo.Record, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			failed++
			if firstErr == nil {
				firstErr = err
			}
			return
		}
		produced++
	}
	// Progress for long runs (a large file on stdin): one stderr line per
	// interval, under mu so that it never interleaves with the summary.
	read := 0
	stopProgress := make(chan struct{})
	progressDone := make(chan struct{})
	go func() {
		defer close(progressDone)
		if *progressEvery <= 0 {
			return
		}
		tick := time.NewTicker(*progressEvery)
		defer tick.Stop()
		for {
			select {
			case <-stopProgress:
				return
			case <-tick.C:
				mu.Lock()
				fmt.Fprintf(c.stderr, "samsa: produce %s: %d lines read, %d acknowledged, %d failed\n", topic, read, produced, failed)
				mu.Unlock()
			}
		}
	}()
	var stopOnce sync.Once
	stop := func() { stopOnce.Do(func() { close(stopProgress); <-progressDone }) }
	defer stop()
	sc := bufio.NewScanner(c.stdin)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for sc.Scan() {
		mu.Lock()
		read++
		mu.Unlock()
		line := sc.Text()
		r := &kgo.Record{Value: []byte(line), Headers: recHeaders}
		if *keySep != "" {
			if k, v, ok := strings.Cut(line, *keySep); ok {
				r.Key, r.Value = []byte(k), []byte(v)
			}
		}
		if *partition >= 0 {
			r.Partition = *partition
		}
		cl.Produce(c.ctx, r, done)
	}
	readErr := sc.Err()
	ctx, cancel := context.WithTimeout(c.ctx, co.timeout)
	defer cancel()
	flushErr := cl.Flush(ctx)
	stop()
	mu.Lock()
	defer mu.Unlock()
	if co.format == "json" {
		out := map[string]any{"topic": topic, "produced": produced, "failed": failed}
		if firstErr != nil {
			out["error"] = firstErr.Error()
		}
		if err := writeJSON(c.stdout, out); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(c.stderr, "samsa: produced %d records to %s\n", produced, topic)
	}
	switch {
	case readErr != nil:
		return fmt.Errorf("reading stdin: %w", readErr)
	case firstErr != nil:
		return fmt.Errorf("%d records failed: %w", failed, firstErr)
	case flushErr != nil:
		return flushErr
	}
	return nil
}

func oneTopic(flag string, args []string) (string, error) {
	switch {
	case flag != "" && len(args) == 0:
		return flag, nil
	case flag == "" && len(args) == 1:
		return args[0], nil
	}
	return "", usagef("give exactly one topic")
}

// recordJSON is one consumed record in --format json (one object a line).
type recordJSON struct {
	Topic     string            `json:"topic"`
	Partition int32             `json:"partition"`
	Offset    int64             `json:"offset"`
	Timestamp int64             `json:"timestamp"`
	Key       *string           `json:"key"`
	Value     string            `json:"value"`
	Headers   map[string]string `json:"headers,omitempty"`
}

// runConsume is `samsa consume TOPIC`: records as lines on stdout.
func runConsume(c *cli, args []string) error {
	fs, co := c.flagSet("consume", "TOPIC [flags]")
	topicFlag := fs.StringP("topic", "t", "", "topic (or give it as the argument)")
	partition := fs.Int32P("partition", "p", -1, "read only this partition")
	offset := fs.StringP("offset", "o", "latest", "where to start without a committed offset: earliest, latest or an offset number")
	fromBeginning := fs.Bool("from-beginning", false, "same as --offset earliest")
	fromTimestamp := fs.String("from-timestamp", "", "start at the first record at or after this time (RFC 3339, or Unix milliseconds)")
	count := fs.IntP("count", "n", 0, "exit after this many records (0: run until interrupted or --idle-timeout)")
	group := fs.StringP("group", "g", "", "consume as this group and commit what was printed")
	keySep := fs.StringP("key-separator", "K", "", "print key SEP value (implies --print-key)")
	printKey := fs.Bool("print-key", false, "print the key before the value, tab-separated unless --key-separator")
	idle := fs.Duration("idle-timeout", 0, "exit after this long without a record (0: never); with -n, fewer records is a failure")
	fs.Lookup("timeout").Usage = "give up connecting after this long"
	if err := parse(fs, co, args); err != nil {
		return err
	}
	topic, err := oneTopic(*topicFlag, fs.Args())
	if err != nil {
		return err
	}
	if *count < 0 {
		return usagef("-n must be at least 0")
	}
	start := kgo.NewOffset().AtEnd()
	switch {
	case *fromTimestamp != "":
		ms, err := parseTime(*fromTimestamp)
		if err != nil {
			return usagef("--from-timestamp: %v", err)
		}
		start = kgo.NewOffset().AfterMilli(ms)
	case *fromBeginning || *offset == "earliest":
		start = kgo.NewOffset().AtStart()
	case *offset == "latest":
	default:
		n, err := strconv.ParseInt(*offset, 10, 64)
		if err != nil || n < 0 {
			return usagef("--offset %q: want earliest, latest or an offset", *offset)
		}
		start = kgo.NewOffset().At(n)
	}
	sep := *keySep
	if sep == "" && *printKey {
		sep = "\t"
	}
	opts := []kgo.Opt{kgo.FetchMaxWait(500 * time.Millisecond)}
	switch {
	case *group != "":
		if *partition >= 0 {
			return usagef("--partition cannot be used with --group")
		}
		opts = append(opts, kgo.ConsumerGroup(*group), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(start), kgo.DisableAutoCommit())
	case *partition >= 0:
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {*partition: start}}))
	default:
		opts = append(opts, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(start))
	}
	cl, err := co.client(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	// The topic must exist: a consumer of a missing topic would wait forever.
	ctx, cancel := c.withTimeout(co)
	if _, err := topicPartitions(ctx, cl, topic); err != nil {
		cancel()
		return err
	}
	cancel()

	w := bufio.NewWriter(c.stdout)
	defer w.Flush()
	enc := json.NewEncoder(w)
	printed := 0
	var toCommit []*kgo.Record
	var failure error
	for *count == 0 || printed < *count {
		pollCtx, pollCancel := c.ctx, context.CancelFunc(func() {})
		if *idle > 0 {
			pollCtx, pollCancel = context.WithTimeout(c.ctx, *idle)
		}
		fetches := cl.PollFetches(pollCtx)
		pollCancel()
		if c.ctx.Err() != nil {
			break // interrupted
		}
		if fetches.IsClientClosed() {
			break
		}
		if err := pollCtx.Err(); err != nil && fetches.NumRecords() == 0 {
			if *count > 0 {
				failure = fmt.Errorf("got %d of %d records before --idle-timeout %s", printed, *count, *idle)
			}
			break
		}
		var fetchErr error
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && fetchErr == nil {
				fetchErr = fmt.Errorf("%s-%d: %w", t, p, err)
			}
		})
		if fetchErr != nil {
			failure = fetchErr
			break
		}
		for _, r := range fetches.Records() {
			if *count > 0 && printed == *count {
				break
			}
			if co.format == "json" {
				j := recordJSON{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp.UnixMilli(), Value: string(r.Value)}
				if r.Key != nil {
					k := string(r.Key)
					j.Key = &k
				}
				for _, h := range r.Headers {
					if j.Headers == nil {
						j.Headers = map[string]string{}
					}
					j.Headers[h.Key] = string(h.Value)
				}
				if err := enc.Encode(j); err != nil {
					return err
				}
			} else {
				if sep != "" {
					w.Write(r.Key)
					w.WriteString(sep)
				}
				w.Write(r.Value)
				w.WriteByte('\n')
			}
			printed++
			toCommit = append(toCommit, r)
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
	if *group != "" && len(toCommit) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), co.timeout)
		defer cancel()
		if err := cl.CommitRecords(ctx, toCommit...); err != nil {
			return fmt.Errorf("committing offsets of group %s: %w", *group, err)
		}
	}
	return failure
}

// topicPartitions returns the partitions of topic, or an error when it
// does not exist.
func topicPartitions(ctx context.Context, cl *kgo.Client, topic string) (int, error) {
	adm := newAdmin(cl)
	details, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return 0, err
	}
	d, ok := details[topic]
	if !ok {
		return 0, fmt.Errorf("topic %s does not exist", topic)
	}
	if d.Err != nil {
		return 0, fmt.Errorf("topic %s: %w", topic, d.Err)
	}
	return len(d.Partitions), nil
}
