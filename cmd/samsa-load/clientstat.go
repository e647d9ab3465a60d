package main

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// What a consumer process of -procs costs and what it receives, so that
// two brokers can be compared on the client side too (issue 15: is the
// client doing more work against one broker than the other?):
//
//   - its own CPU time in the consume phase (getrusage of the process:
//     user and system, every goroutine of franz-go included) and its minor
//     page faults (fresh memory for the response buffers faults, and the
//     kernel zeroes each page; reused memory does not);
//   - the Fetch responses it read and their bytes, counted by a franz-go
//     HookBrokerRead hook (bytes as read off the socket, size prefix
//     included), and the Metadata responses (refreshes);
//   - the time its fetches were in flight (franz-go's HookBrokerE2E: from
//     writing the request to having read the whole response), summed:
//     the rest of the phase the consumer spent decoding, counting and
//     polling, with no fetch out (franz-go sends a partition's next fetch
//     only once the previous response was taken by PollFetches).

// wireCounter counts responses read from the brokers by API key.
type wireCounter struct {
	fetches, fetchBytes, metadata, other atomic.Int64
	fetchNanos                           atomic.Int64
	// batches and batchBytes count the whole record batches franz-go's
	// consumer decoded (HookFetchBatchRead) and their bytes, header
	// included; the raw loop counts its own (rawconsume.go). Response
	// bytes that are neither framing nor whole batches are partial
	// batches a range ended inside (read and dropped).
	batches, batchBytes atomic.Int64
}

// OnFetchBatchRead implements kgo.HookFetchBatchRead.
func (c *wireCounter) OnFetchBatchRead(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.FetchBatchMetrics) {
	c.batches.Add(1)
	c.batchBytes.Add(int64(m.CompressedBytes) + 61) // Records plus the v2 batch header
}

// OnBrokerE2E implements kgo.HookBrokerE2E.
func (c *wireCounter) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	if key == 1 && e2e.Err() == nil {
		c.fetchNanos.Add(int64(e2e.DurationE2E()))
	}
}

// OnBrokerRead implements kgo.HookBrokerRead.
func (c *wireCounter) OnBrokerRead(_ kgo.BrokerMetadata, key int16, bytesRead int, _, _ time.Duration, err error) {
	if err != nil {
		return
	}
	switch key {
	case 1: // Fetch
		c.fetches.Add(1)
		c.fetchBytes.Add(int64(bytesRead))
	case 3: // Metadata
		c.metadata.Add(1)
	default:
		c.other.Add(1)
	}
}

// wireCounts is a snapshot of a wireCounter.
type wireCounts struct {
	fetches, fetchBytes, metadata, other, fetchNanos int64
	batches, batchBytes                              int64
}

func (c *wireCounter) snapshot() wireCounts {
	return wireCounts{c.fetches.Load(), c.fetchBytes.Load(), c.metadata.Load(), c.other.Load(), c.fetchNanos.Load(),
		c.batches.Load(), c.batchBytes.Load()}
}

// goUsage returns this process's garbage collections so far and the
// bytes its Go heap allocated.
func goUsage() (gcs, alloc int64) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.NumGC), int64(ms.TotalAlloc)
}

// usage is what this process used so far: CPU time (user + system),
// minor page faults, voluntary and involuntary context switches, and
// read system calls (/proc/self/io's syscr: the socket reads of the
// responses; 0 where that file is missing).
type usage struct {
	cpu                        time.Duration
	minflt, vcsw, nvcsw, reads int64
}

func selfUsage() usage {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return usage{}
	}
	u := usage{cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), minflt: int64(ru.Minflt), vcsw: int64(ru.Nvcsw), nvcsw: int64(ru.Nivcsw)}
	if b, err := os.ReadFile("/proc/self/io"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "syscr: "); ok {
				u.reads, _ = strconv.ParseInt(v, 10, 64)
			}
		}
	}
	return u
}

// clientTotals sums the consumer children's client-side figures into r.
func clientTotals(r *result, rs []childResult, bytes int64) {
	var cpu, minflt, fetches, fetchBytes, metadata, inFlight, wall int64
	var batches, batchBytes, gcs, alloc, vcsw, nvcsw, reads int64
	for _, c := range rs {
		vcsw += c.VCSw
		nvcsw += c.NVCSw
		reads += c.Reads
		batches += c.Batches
		batchBytes += c.BatchBytes
		gcs += c.GCs
		alloc += c.Alloc
		inFlight += c.FetchNanos
		wall += c.End - c.Start
		cpu += c.CPUNanos
		minflt += c.MinFlt
		fetches += c.Fetches
		fetchBytes += c.FetchBytes
		metadata += c.Metadata
	}
	if bytes > 0 && cpu > 0 {
		r.ClientCPUSeconds = float64(cpu) / 1e9
		r.ClientCPUSecPerGB = r.ClientCPUSeconds / (float64(bytes) / 1e9)
		r.ClientMinFltPerGB = float64(minflt) / (float64(bytes) / 1e9)
		r.ClientGCsPerGB = float64(gcs) / (float64(bytes) / 1e9)
		r.ClientVCSwPerGB = float64(vcsw) / (float64(bytes) / 1e9)
		r.ClientNVCSwPerGB = float64(nvcsw) / (float64(bytes) / 1e9)
		r.ClientReadsPerGB = float64(reads) / (float64(bytes) / 1e9)
		r.ClientAllocPerByte = float64(alloc) / float64(bytes)
	}
	if bytes > 0 && batches > 0 {
		r.BatchesPerGB = float64(batches) / (float64(bytes) / 1e9)
		r.AvgBatchKB = float64(batchBytes) / float64(batches) / 1024
		if fetchBytes > batchBytes {
			r.NonBatchMBPerGB = float64(fetchBytes-batchBytes) / 1e6 / (float64(bytes) / 1e9)
		}
	}
	r.FetchResponses, r.MetadataResponses = fetches, metadata
	if wall > 0 {
		r.FetchInFlightShare = float64(inFlight) / float64(wall)
	}
	if fetches > 0 {
		r.AvgFetchKB = float64(fetchBytes) / float64(fetches) / 1024
		r.FetchesPerGB = float64(fetches) / (float64(bytes) / 1e9)
	}
}
