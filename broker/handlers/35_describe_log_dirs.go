package handlers

import (
	"path/filepath"
	"sort"
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/storage"
)

// DescribeLogDirs, key 35, versions 0-5.
//
//   - v0: topics with partitions to describe; null means every partition
//     this node hosts (an empty array describes none). The answer has one
//     entry per log directory (log.dirs), by absolute path, even when it
//     holds none of the asked partitions; each lists its asked partitions
//     with size in bytes, offset_lag max(high watermark - log end offset, 0)
//     (always 0 on a leader) and is_future false; a replica being moved
//     by AlterReplicaLogDirs is also listed in its target directory with
//     is_future true, the bytes copied as size and the offsets not yet
//     copied as offset_lag, as Kafka lists its future replica.
//   - v1: throttle_time_ms after the response (always 0).
//   - v2: flexible.
//   - v3: top-level error_code (CLUSTER_AUTHORIZATION_FAILED without
//     DESCRIBE on the cluster, authz_admin.go).
//   - v4: total_bytes and usable_bytes of the directory's volume (statfs).
//   - v5: is_cordoned, whether the directory is in cordoned.log.dirs now
//     (KIP-1066; the dynamic value when set). kafka-python infers a 4.3+
//     broker from DescribeLogDirs v5 and took samsa, which stopped at v4,
//     for 4.2.
//
// A failed (offline) log directory, and one whose volume cannot be read,
// is KAFKA_STORAGE_ERROR, as Kafka answers for an offline log directory. Topics are sorted by
// name and partitions by index.
func handleDescribeLogDirs(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)

	var want map[storage.TopicPartition]bool
	if req.Topics != nil {
		want = map[storage.TopicPartition]bool{}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				want[storage.TopicPartition{Topic: t.Topic, Partition: p}] = true
			}
		}
	}

	// byDir groups the asked logs by the log directory that holds them.
	byDir := map[string]map[string][]kmsg.DescribeLogDirsResponseDirTopicPartition{}
	for tp, l := range d.Logs.Logs() {
		if want != nil && !want[tp] {
			continue
		}
		dir := absDir(filepath.Dir(l.Dir()))
		if byDir[dir] == nil {
			byDir[dir] = map[string][]kmsg.DescribeLogDirsResponseDirTopicPartition{}
		}
		p := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		p.Partition = tp.Partition
		p.Size = l.Size()
		p.OffsetLag = max(l.HighWatermark()-l.LogEndOffset(), 0)
		byDir[dir][tp.Topic] = append(byDir[dir][tp.Topic], p)
	}
	// Moves in progress (AlterReplicaLogDirs): the copy is a future
	// replica of the target directory, its lag the offsets not copied.
	for tp, f := range d.Logs.FutureLogs() {
		l, ok := d.Logs.Log(tp)
		if !ok || want != nil && !want[tp] {
			continue
		}
		dir := absDir(f.Dir)
		if byDir[dir] == nil {
			byDir[dir] = map[string][]kmsg.DescribeLogDirsResponseDirTopicPartition{}
		}
		p := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		p.Partition = tp.Partition
		p.Size = f.Size
		p.OffsetLag = max(l.LogEndOffset()-f.LogEndOffset, 0)
		p.IsFuture = true
		byDir[dir][tp.Topic] = append(byDir[dir][tp.Topic], p)
	}

	seen := map[string]bool{}
	for _, logDir := range d.Config.LogDirs {
		dir := absDir(logDir)
		if seen[dir] {
			continue
		}
		seen[dir] = true
		rd := kmsg.NewDescribeLogDirsResponseDir()
		rd.Dir = dir
		var st syscall.Statfs_t
		if d.Logs != nil && d.Logs.LogDirFailed(logDir) {
			rd.ErrorCode = kerr.KafkaStorageError.Code // offline (KIP-858)
			resp.Dirs = append(resp.Dirs, rd)
			continue
		}
		if err := syscall.Statfs(dir, &st); err != nil {
			rd.ErrorCode = kerr.KafkaStorageError.Code
			resp.Dirs = append(resp.Dirs, rd)
			continue
		}
		rd.TotalBytes = volumeBytes(uint64(st.Blocks), uint64(st.Bsize))
		rd.UsableBytes = volumeBytes(uint64(st.Bavail), uint64(st.Bsize))
		rd.IsCordoned = d.Logs != nil && d.Logs.DirCordoned(logDir)
		topics := byDir[dir]
		names := make([]string, 0, len(topics))
		for n := range topics {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			parts := topics[n]
			sort.Slice(parts, func(i, j int) bool {
				if parts[i].Partition != parts[j].Partition {
					return parts[i].Partition < parts[j].Partition
				}
				return !parts[i].IsFuture && parts[j].IsFuture
			})
			rt := kmsg.NewDescribeLogDirsResponseDirTopic()
			rt.Topic = n
			rt.Partitions = parts
			rd.Topics = append(rd.Topics, rt)
		}
		resp.Dirs = append(resp.Dirs, rd)
	}
	return resp, nil
}

// absDir is the absolute, cleaned form of a directory, as Kafka reports
// log directories.
func absDir(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return filepath.Clean(dir)
}

// volumeBytes multiplies blocks by block size, saturating like Kafka's
// adjustForLargeFileSystems at the largest int64.
func volumeBytes(blocks, size uint64) int64 {
	const maxInt64 = 1<<63 - 1
	if size != 0 && blocks > maxInt64/size {
		return maxInt64
	}
	return int64(blocks * size)
}
