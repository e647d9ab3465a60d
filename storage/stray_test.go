package storage

import (
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/samsa-broker/samsa/storage/vfs"
)

var (
	strayTestIDA = [16]byte{0xa, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	strayTestIDB = [16]byte{0xb, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
)

// TestDeleteLogLongTopicName is the regression test for issue 11 item 13:
// DeleteTopics of a topic with a 249-character name answered 0, but the
// rename to "<topic>-0.<32 hex>-delete" failed with "file name too long";
// the directory stayed and a new topic of the same name served the deleted
// topic's data. The delete name is cut to 255 bytes as Kafka does, and a
// re-created topic starts empty.
func TestDeleteLogLongTopicName(t *testing.T) {
	root := t.TempDir()
	clock := newClock()
	m, err := OpenManager(ManagerOptions{FS: vfs.OS, Dirs: []string{root}, Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	tp := TopicPartition{Topic: strings.Repeat("x", 249), Partition: 0}
	l, err := m.CreateLog(tp, strayTestIDA, smallConfig())
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		mustAppend(t, l, testBatch(2, 1000, 40))
	}
	if err := m.DeleteLog(tp); err != nil {
		t.Fatalf("DeleteLog of a 249-character topic: %v", err)
	}
	if vfs.OS.Exists(filepath.Join(root, tp.String())) {
		t.Fatal("partition directory still in place after DeleteLog")
	}
	l, err = m.CreateLog(tp, strayTestIDB, smallConfig())
	if err != nil {
		t.Fatal(err)
	}
	if leo := l.LogEndOffset(); leo != 0 {
		t.Fatalf("re-created topic serves the deleted topic's data: LEO %d", leo)
	}
	for _, name := range []string{
		setAsideDirName(tp, deleteDirSuffix),
		setAsideDirName(TopicPartition{Topic: strings.Repeat("y", 249), Partition: 2147483647}, strayDirSuffix),
		setAsideDirName(TopicPartition{Topic: "short", Partition: 3}, strayDirSuffix),
	} {
		if len(name) > maxFileNameBytes {
			t.Fatalf("%d bytes: %s", len(name), name)
		}
	}
	if got := setAsideDirName(TopicPartition{Topic: "short", Partition: 3}, deleteDirSuffix); !strings.HasPrefix(got, "short-3.") || len(got) != len("short-3.")+32+len("-delete") {
		t.Fatalf("short name %q", got)
	}
	if topic, p, ok := parseSetAsideDirName(setAsideDirName(TopicPartition{Topic: "a-b.c-1", Partition: 7}, strayDirSuffix), strayDirSuffix); !ok || topic != "a-b.c-1" || p != 7 {
		t.Fatalf("parse: %q %d %v", topic, p, ok)
	}
}

// TestCreateLogNeverReusesOtherTopicDir is the second half of issue 11
// item 13: a directory left in place (a delete whose rename failed) was
// reused by CreateLog, which wrote the new topic id over its
// partition.metadata and served the old segments. It is moved aside as
// stray (kept, with an ERROR line) and the new log starts empty.
func TestCreateLogNeverReusesOtherTopicDir(t *testing.T) {
	fsys := vfs.NewMem()
	clock := newClock()
	errs := &errorLog{}
	m, err := OpenManager(ManagerOptions{FS: fsys, Dirs: []string{"/d"}, Now: clock.now, Logger: slog.New(errs)})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	tp := TopicPartition{Topic: "t", Partition: 0}
	l, err := m.CreateLog(tp, strayTestIDA, smallConfig())
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		mustAppend(t, l, testBatch(2, 1000, 40))
	}
	if _, err := m.CreateLog(tp, strayTestIDB, smallConfig()); err == nil {
		t.Fatal("CreateLog returned topic A's open log for topic B")
	}
	// A failed delete: the log is forgotten, its directory stays.
	m.mu.Lock()
	delete(m.mu.logs, tp)
	m.mu.Unlock()
	l.Close()
	l, err = m.CreateLog(tp, strayTestIDB, smallConfig())
	if err != nil {
		t.Fatal(err)
	}
	if leo := l.LogEndOffset(); leo != 0 || m.TopicID(tp) != strayTestIDB {
		t.Fatalf("new topic got the old directory: LEO %d id %x", leo, m.TopicID(tp))
	}
	strays := strayDirs(t, fsys, "/d")
	if len(strays) != 1 || !fsys.Exists(filepath.Join("/d", strays[0], "00000000000000000000.log")) {
		t.Fatalf("old data not kept aside: %v", strays)
	}
	if errs.count("moved aside as stray") != 1 {
		t.Fatalf("ERROR lines: %v", errs.lines)
	}
}

// TestMoveStrayKeepsData is the regression test for issue 11 item 9: a
// partition directory the metadata did not know (after a torn or damaged
// metadata log) was deleted at start with one WARN line. MoveStray renames
// it aside with an ERROR line naming offsets and bytes; later starts keep
// it, say so, and never delete it.
func TestMoveStrayKeepsData(t *testing.T) {
	fsys := vfs.NewMem()
	clock := newClock()
	errs := &errorLog{}
	m, err := OpenManager(ManagerOptions{FS: fsys, Dirs: []string{"/d"}, Now: clock.now, Logger: slog.New(errs)})
	if err != nil {
		t.Fatal(err)
	}
	tp := TopicPartition{Topic: "orders", Partition: 1}
	l, err := m.CreateLog(tp, strayTestIDA, smallConfig())
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		mustAppend(t, l, testBatch(2, 1000, 40))
	}
	if err := m.MoveStray(tp, "test"); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Log(tp); ok || fsys.Exists("/d/orders-1") {
		t.Fatal("stray log still served or in place")
	}
	if n := errs.count("moved aside as stray"); n != 1 || errs.count("log_end_offset=10") != 1 {
		t.Fatalf("ERROR lines: %v", errs.lines)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		var buf strings.Builder
		m, err = OpenManager(ManagerOptions{FS: fsys, Dirs: []string{"/d"}, Now: clock.now, Logger: slog.New(slog.NewTextHandler(&buf, nil))})
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Logs()) != 0 {
			t.Fatalf("stray dir loaded: %v", m.Logs())
		}
		if !strings.Contains(buf.String(), "stray partition directory kept") || strings.Contains(buf.String(), "directory missing") {
			t.Fatalf("log:\n%s", buf.String())
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
	}
	strays := strayDirs(t, fsys, "/d")
	if len(strays) != 1 {
		t.Fatalf("strays %v", strays)
	}
	// The stray directory still opens as a log with all its records.
	sl, err := OpenLog(LogOptions{FS: fsys, Dir: filepath.Join("/d", strays[0]), Config: smallConfig(), Now: clock.now, RecoveryPoint: -1, LogStartOffset: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer sl.Close()
	if sl.LogEndOffset() != 10 {
		t.Fatalf("stray LEO %d", sl.LogEndOffset())
	}
}

// TestMissingPartitionDirIsAnError is the storage half of the regression
// test for issue 11 item 14 (a partition directory gone): a partition the
// checkpoints know whose directory was removed from outside came back
// empty with no log line. OpenManager now reports it (MissingAtStart, with
// its offsets; the broker logs the ERROR when the metadata still assigns
// it); a directory gone through DeleteLog (a "-delete" name left by a
// crash) is not reported.
func TestMissingPartitionDirIsAnError(t *testing.T) {
	fsys := vfs.NewMem()
	clock := newClock()
	m, err := OpenManager(ManagerOptions{FS: fsys, Dirs: []string{"/d"}, Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	gone, deleted := TopicPartition{Topic: "gone", Partition: 0}, TopicPartition{Topic: "deleted", Partition: 0}
	for _, tp := range []TopicPartition{gone, deleted} {
		l, err := m.CreateLog(tp, strayTestIDA, smallConfig())
		if err != nil {
			t.Fatal(err)
		}
		for range 5 {
			mustAppend(t, l, testBatch(2, 1000, 40))
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fsys.RemoveAll("/d/gone-0"); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Rename("/d/deleted-0", filepath.Join("/d", setAsideDirName(deleted, deleteDirSuffix))); err != nil {
		t.Fatal(err)
	}
	m, err = OpenManager(ManagerOptions{FS: fsys, Dirs: []string{"/d"}, Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	missing := m.MissingAtStart()
	if len(missing) != 1 || missing[gone].RecoveryPoint != 10 || missing[gone].LogStartOffset != 0 || missing[gone].Dir != "/d/gone-0" {
		t.Fatalf("MissingAtStart %+v", missing)
	}
}

// TestSetTopicID is the storage half of issue 11 item 10: a log whose
// partition.metadata is missing is opened with no topic id (it was
// deleted at start before), and SetTopicID writes the file back.
func TestSetTopicID(t *testing.T) {
	fsys := vfs.NewMem()
	clock := newClock()
	m, err := OpenManager(ManagerOptions{FS: fsys, Dirs: []string{"/d"}, Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	tp := TopicPartition{Topic: "t", Partition: 0}
	l, err := m.CreateLog(tp, strayTestIDA, smallConfig())
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, testBatch(2, 1000, 40))
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Remove("/d/t-0/" + partitionMetadataFile); err != nil {
		t.Fatal(err)
	}
	reopen := func() *Manager {
		m, err := OpenManager(ManagerOptions{FS: fsys, Dirs: []string{"/d"}, Now: clock.now})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	m = reopen()
	if _, ok := m.Log(tp); !ok || m.TopicID(tp) != [16]byte{} {
		t.Fatalf("log without partition.metadata: loaded %v id %x", ok, m.TopicID(tp))
	}
	if err := m.SetTopicID(tp, strayTestIDA); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m = reopen()
	defer m.Close()
	if m.TopicID(tp) != strayTestIDA {
		t.Fatalf("id after rewrite %x", m.TopicID(tp))
	}
	m.TakeOffline(tp, "test")
	if _, err := m.CreateLog(tp, strayTestIDA, smallConfig()); err == nil || !strings.Contains(err.Error(), "offline") {
		t.Fatalf("CreateLog of an offline partition: %v", err)
	}
	if !fsys.Exists("/d/t-0/00000000000000000000.log") {
		t.Fatal("offline log's files removed")
	}
}

func strayDirs(t *testing.T, fsys vfs.FS, dir string) []string {
	t.Helper()
	names, err := fsys.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if strings.HasSuffix(n, strayDirSuffix) {
			out = append(out, n)
		}
	}
	return out
}

// TestOpenManagerWithinFileBudget is the storage half of issue 11 item 5's
// last part: a broker holding more partitions than its open file limit
// allows could not start (every segment keeps 3 files open). Partitions
// beyond ManagerOptions.OpenFileBudget stay on disk, unopened and offline,
// with one ERROR line, and the rest are served.
func TestOpenManagerWithinFileBudget(t *testing.T) {
	fsys := vfs.NewMem()
	clock := newClock()
	m, err := OpenManager(ManagerOptions{FS: fsys, Dirs: []string{"/d"}, Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(10) {
		l, err := m.CreateLog(TopicPartition{Topic: "t", Partition: p}, strayTestIDA, smallConfig())
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, l, testBatch(2, 1000, 40))
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	errs := &errorLog{}
	m, err = OpenManager(ManagerOptions{FS: fsys, Dirs: []string{"/d"}, Now: clock.now, Logger: slog.New(errs), OpenFileBudget: 4 * 3})
	if err != nil {
		t.Fatalf("start over the open file budget: %v", err)
	}
	defer m.Close()
	if len(m.Logs()) != 4 || m.UnopenedAtStart() != 6 {
		t.Fatalf("opened %d, unopened %d; want 4 and 6", len(m.Logs()), m.UnopenedAtStart())
	}
	if errs.count("partitions left unopened") != 1 || errs.count("unopened=6") != 1 {
		t.Fatalf("ERROR lines: %v", errs.lines)
	}
	if len(m.MissingAtStart()) != 0 {
		t.Fatalf("unopened partitions reported missing: %v", m.MissingAtStart())
	}
	for p := range int32(10) {
		tp := TopicPartition{Topic: "t", Partition: p}
		if _, ok := m.Log(tp); ok {
			continue
		}
		if _, err := m.CreateLog(tp, strayTestIDA, smallConfig()); err == nil || !strings.Contains(err.Error(), "offline") {
			t.Fatalf("CreateLog of unopened %v: %v", tp, err)
		}
		if !fsys.Exists(filepath.Join("/d", tp.String(), "00000000000000000000.log")) {
			t.Fatalf("unopened %v lost its data", tp)
		}
	}
}

// TestLastSegmentDeletedIsAnError is the regression test for issue 11 item
// 14 (a segment file deleted from outside): deleting the active segment's
// .log lost the offsets in it (74-99 here) with no log line, because the
// log simply ended at the previous segment. Offsets below the
// checkpointed recovery point were flushed, so their absence is an ERROR.
func TestLastSegmentDeletedIsAnError(t *testing.T) {
	fsys, clock := fillLog(t, 100)
	segs := segmentNames(t, fsys, "/d/t-0")
	if err := fsys.Remove("/d/t-0/" + segs[len(segs)-1]); err != nil {
		t.Fatal(err)
	}
	errs := &errorLog{}
	l, err := OpenLog(LogOptions{FS: fsys, Dir: "/d/t-0", Config: smallConfig(), Now: clock.now, Logger: slog.New(errs), RecoveryPoint: 100, LogStartOffset: 0})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	leo := l.LogEndOffset()
	if leo >= 100 || errs.count("log ends below its checkpointed recovery point") != 1 || errs.count("offsets_to=99") != 1 || errs.count("partition=t-0") != 1 {
		t.Fatalf("LEO %d, ERROR lines %v", leo, errs.lines)
	}
}

// TestCreateLogAfterInterruptedCreate: a process killed while creating a
// log, between writing partition.metadata's temporary file and renaming
// it, leaves a directory holding only that file. The next CreateLog uses
// the directory (the leftover is removed), with no stray and no ERROR line
// (seen in TestKillDuringAcksAllProduction: a SIGKILL while the internal
// topics were created).
func TestCreateLogAfterInterruptedCreate(t *testing.T) {
	fsys := vfs.NewMem()
	clock := newClock()
	errs := &errorLog{}
	tp := TopicPartition{Topic: "t", Partition: 0}
	dir := filepath.Join("/d", tp.String())
	if err := fsys.MkdirAll(dir); err != nil {
		t.Fatal(err)
	}
	f, err := fsys.Create(filepath.Join(dir, partitionMetadataFile+tmpSuffix))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	m, err := OpenManager(ManagerOptions{FS: fsys, Dirs: []string{"/d"}, Now: clock.now, Logger: slog.New(errs)})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l, err := m.CreateLog(tp, strayTestIDA, smallConfig())
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, testBatch(2, 1000, 40))
	if strays := strayDirs(t, fsys, "/d"); len(strays) != 0 || m.TopicID(tp) != strayTestIDA {
		t.Fatalf("strays %v, topic id %x", strays, m.TopicID(tp))
	}
	if fsys.Exists(filepath.Join(dir, partitionMetadataFile+tmpSuffix)) {
		t.Fatal("the leftover temporary file is still there")
	}
	if len(errs.lines) != 0 {
		t.Fatalf("ERROR lines: %v", errs.lines)
	}
}
