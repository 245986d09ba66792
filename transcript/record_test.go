package transcript

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// testHelperEnv switches the test binary into a helper process; its value
// names the helper's job.
const testHelperEnv = "DIRTYWORK_TRANSCRIPT_TEST_HELPER"

// spawnTestHelper builds a command that re-runs this test binary as a helper
// process running only the named test, with the given mode and arguments.
func spawnTestHelper(t *testing.T, testName, mode string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^" + testName + "$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), testHelperEnv+"="+mode)
	return cmd
}

// helperArgs returns the arguments after "--" given to a helper process.
func helperArgs() []string {
	for i, a := range os.Args {
		if a == "--" {
			return os.Args[i+1:]
		}
	}
	return nil
}

// TestRecordHelperProcess is not a test: it is the body of the helper
// processes that merge into a run.json concurrently.
func TestRecordHelperProcess(t *testing.T) {
	if os.Getenv(testHelperEnv) != "merge" {
		return
	}
	args := helperArgs()
	runDir, id := args[0], args[1]
	n, err := strconv.Atoi(args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for i := range n {
		if _, err := MergeRecord(runDir, Record{fmt.Sprintf("p%s-%d", id, i): i}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	os.Exit(0)
}

func newRunDir(t *testing.T) string {
	t.Helper()
	dir, err := CreateRunDir(filepath.Join(t.TempDir(), "runs"), "run-1")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestWriteRecordFormat(t *testing.T) {
	dir := newRunDir(t)
	rec := Record{
		"task":   "<b>fix</b> & test",
		"turns":  3,
		"nan":    math.NaN(),
		"inf":    math.Inf(-1),
		"nested": map[string]any{"z": []any{math.NaN(), 1.5}, "a": []float64{math.Inf(1), 2}},
		"empty":  nil,
		"text":   "ünïcode",
	}
	if err := WriteRecord(dir, rec); err != nil {
		t.Fatalf("WriteRecord: %v", err)
	}

	got, err := os.ReadFile(filepath.Join(dir, RecordName))
	if err != nil {
		t.Fatal(err)
	}
	want := `{
  "empty": null,
  "inf": null,
  "nan": null,
  "nested": {
    "a": [
      null,
      2
    ],
    "z": [
      null,
      1.5
    ]
  },
  "task": "<b>fix</b> & test",
  "text": "ünïcode",
  "turns": 3
}
`
	if string(got) != want {
		t.Errorf("run.json =\n%s\nwant\n%s", got, want)
	}
	checkMode(t, filepath.Join(dir, RecordName), 0o600)
	if _, err := os.Lstat(filepath.Join(dir, recordTmpName)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("temp file left behind: %v", err)
	}
}

func TestWriteRecordNilIsEmptyObject(t *testing.T) {
	dir := newRunDir(t)
	if err := WriteRecord(dir, nil); err != nil {
		t.Fatalf("WriteRecord: %v", err)
	}
	got, err := os.ReadFile(filepath.Join(dir, RecordName))
	if err != nil || string(got) != "{}\n" {
		t.Errorf("run.json = %q, %v; want {}", got, err)
	}
}

func TestWriteRecordReplacesByRename(t *testing.T) {
	dir := newRunDir(t)
	path := filepath.Join(dir, RecordName)
	if err := WriteRecord(dir, Record{"v": 1}); err != nil {
		t.Fatal(err)
	}
	// A hard link keeps the old inode: if the write went into the old file
	// in place, the link would show the new content too.
	old := filepath.Join(t.TempDir(), "old.json")
	if err := os.Link(path, old); err != nil {
		t.Fatal(err)
	}
	// A stale temp file from a crashed writer, with a looser mode.
	if err := os.WriteFile(filepath.Join(dir, recordTmpName), []byte("junk junk junk junk"), 0o644); err != nil {
		t.Fatal(err)
	}

	if err := WriteRecord(dir, Record{"v": 2}); err != nil {
		t.Fatalf("WriteRecord: %v", err)
	}
	if b, _ := os.ReadFile(old); string(b) != "{\n  \"v\": 1\n}\n" {
		t.Errorf("old inode changed to %q: run.json was not replaced by rename", b)
	}
	if b, _ := os.ReadFile(path); string(b) != "{\n  \"v\": 2\n}\n" {
		t.Errorf("run.json = %q", b)
	}
	checkMode(t, path, 0o600)
}

func TestWriteRecordRefusesSymlinkedTemp(t *testing.T) {
	dir := newRunDir(t)
	victim := filepath.Join(t.TempDir(), "victim")
	seedFile(t, victim, "keep me")
	seedSymlink(t, victim, filepath.Join(dir, recordTmpName))

	if err := WriteRecord(dir, Record{"v": 1}); err == nil {
		t.Fatal("WriteRecord wrote through a symlinked temp file")
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep me" {
		t.Errorf("symlink target was overwritten: %q", b)
	}
}

func TestReadRecordKeepsNumbersExact(t *testing.T) {
	dir := newRunDir(t)
	raw := "{\"big\": 12345678901234567890, \"pid\": 4242, \"ratio\": 0.1}\n"
	seedFile(t, filepath.Join(dir, RecordName), raw)

	if _, err := MergeRecord(dir, Record{"status": "completed"}); err != nil {
		t.Fatalf("MergeRecord: %v", err)
	}
	rec, err := ReadRecord(dir)
	if err != nil {
		t.Fatalf("ReadRecord: %v", err)
	}
	if got := rec["big"]; got != json.Number("12345678901234567890") {
		t.Errorf("big = %#v, want the exact digits", got)
	}
	if pid, ok := rec.Int("pid"); !ok || pid != 4242 {
		t.Errorf("Int(pid) = %d, %v", pid, ok)
	}
	if s, ok := rec.String("status"); !ok || s != "completed" {
		t.Errorf("String(status) = %q, %v", s, ok)
	}
}

func TestReadRecordMissing(t *testing.T) {
	dir := newRunDir(t)
	_, err := ReadRecord(dir)
	if !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrCorruptRecord) {
		t.Fatalf("ReadRecord() error = %v, want fs.ErrNotExist only", err)
	}
}

func TestReadRecordCorrupt(t *testing.T) {
	tests := []struct {
		name   string
		setup  func(t *testing.T, path string)
		detail string
	}{
		{"not JSON", func(t *testing.T, p string) { seedFile(t, p, "status: running") }, "invalid JSON"},
		{"empty file", func(t *testing.T, p string) { seedFile(t, p, "") }, "invalid JSON"},
		{"truncated", func(t *testing.T, p string) { seedFile(t, p, `{"status": "run`) }, "invalid JSON"},
		{"array", func(t *testing.T, p string) { seedFile(t, p, "[1, 2]") }, "not a JSON object (found an array)"},
		{"null", func(t *testing.T, p string) { seedFile(t, p, "null") }, "not a JSON object (found null)"},
		{"string", func(t *testing.T, p string) { seedFile(t, p, `"x"`) }, "not a JSON object (found a string)"},
		{"two objects", func(t *testing.T, p string) { seedFile(t, p, `{"a":1} {"b":2}`) }, "unexpected data"},
		{"a directory", func(t *testing.T, p string) { seedDir(t, p) }, "cannot read it"},
		{"a symlink", func(t *testing.T, p string) {
			target := filepath.Join(t.TempDir(), "elsewhere.json")
			seedFile(t, target, "{}")
			seedSymlink(t, target, p)
		}, "cannot open it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := newRunDir(t)
			path := filepath.Join(dir, RecordName)
			tt.setup(t, path)

			_, err := ReadRecord(dir)
			if !errors.Is(err, ErrCorruptRecord) {
				t.Fatalf("ReadRecord() error = %v, want ErrCorruptRecord", err)
			}
			prefix := "run.json of 'run-1' is corrupt: " + path + ": " + tt.detail
			if !strings.HasPrefix(err.Error(), prefix) {
				t.Errorf("message = %q, want prefix %q", err.Error(), prefix)
			}
			// An update must not clobber what it cannot read.
			if _, err := MergeRecord(dir, Record{"x": 1}); !errors.Is(err, ErrCorruptRecord) {
				t.Errorf("MergeRecord() error = %v, want ErrCorruptRecord", err)
			}
		})
	}
}

func TestRecordGetters(t *testing.T) {
	rec := Record{
		"s":       "x",
		"num":     json.Number("7"),
		"frac":    json.Number("7.5"),
		"int":     42,
		"uint":    uint64(9),
		"hugeu":   uint64(math.MaxUint64),
		"float":   3.0,
		"floatfr": 3.25,
		"t":       true,
		"nil":     nil,
	}
	tests := []struct {
		key    string
		wantI  int64
		wantOK bool
	}{
		{"num", 7, true},
		{"int", 42, true},
		{"uint", 9, true},
		{"float", 3, true},
		{"frac", 0, false},
		{"hugeu", 0, false},
		{"floatfr", 0, false},
		{"t", 0, false}, // a boolean is never a number
		{"s", 0, false},
		{"nil", 0, false},
		{"absent", 0, false},
	}
	for _, tt := range tests {
		got, ok := rec.Int(tt.key)
		if ok != tt.wantOK || (ok && got != tt.wantI) {
			t.Errorf("Int(%q) = %d, %v; want %d, %v", tt.key, got, ok, tt.wantI, tt.wantOK)
		}
	}
	if s, ok := rec.String("s"); !ok || s != "x" {
		t.Errorf("String(s) = %q, %v", s, ok)
	}
	if _, ok := rec.String("num"); ok {
		t.Error("String(num) reported a number as a string")
	}
	if b, ok := rec.Bool("t"); !ok || !b {
		t.Errorf("Bool(t) = %v, %v", b, ok)
	}
	if _, ok := rec.Bool("int"); ok {
		t.Error("Bool(int) reported a number as a boolean")
	}
}

func TestUpdateRecordFnErrorWritesNothing(t *testing.T) {
	dir := newRunDir(t)
	if err := WriteRecord(dir, Record{"status": "running"}); err != nil {
		t.Fatal(err)
	}
	errStop := errors.New("stop")

	_, err := UpdateRecord(dir, func(rec Record) error {
		rec["status"] = "completed"
		return errStop
	})
	if !errors.Is(err, errStop) {
		t.Fatalf("UpdateRecord() error = %v, want errStop", err)
	}
	rec, err := ReadRecord(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := rec.String("status"); s != "running" {
		t.Errorf("status = %q after a failed update, want running", s)
	}
}

func TestMergeRecord(t *testing.T) {
	dir := newRunDir(t)
	if err := WriteRecord(dir, Record{"status": "running", "started": "2026-08-14T11:09:00Z"}); err != nil {
		t.Fatal(err)
	}

	got, err := MergeRecord(dir, Record{"status": "completed", "verify": nil, "score": math.NaN()})
	if err != nil {
		t.Fatalf("MergeRecord: %v", err)
	}
	want := Record{"status": "completed", "started": "2026-08-14T11:09:00Z", "verify": nil, "score": nil}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("MergeRecord() = %v, want %v", got, want)
	}
	onDisk, err := ReadRecord(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(onDisk, want) {
		t.Errorf("run.json = %v, want %v", onDisk, want)
	}
}

func TestMergeRecordMissing(t *testing.T) {
	dir := newRunDir(t)
	if _, err := MergeRecord(dir, Record{"a": 1}); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("MergeRecord() error = %v, want fs.ErrNotExist", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, RecordName)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("MergeRecord invented a run.json: %v", err)
	}
}

func TestMergeRecordConcurrentGoroutines(t *testing.T) {
	const workers, merges = 8, 50
	dir := newRunDir(t)
	if err := WriteRecord(dir, Record{"slug": "run-1"}); err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range merges {
				if _, err := MergeRecord(dir, Record{fmt.Sprintf("g%d-%d", w, i): i}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("MergeRecord: %v", err)
	}

	rec, err := ReadRecord(dir)
	if err != nil {
		t.Fatal(err)
	}
	checkAllKeys(t, rec, "g", workers, merges)
}

func TestMergeRecordConcurrentProcesses(t *testing.T) {
	const procs, merges = 4, 25
	dir := newRunDir(t)
	if err := WriteRecord(dir, Record{"slug": "run-1"}); err != nil {
		t.Fatal(err)
	}

	cmds := make([]*exec.Cmd, procs)
	stderrs := make([]strings.Builder, procs)
	for p := range procs {
		cmds[p] = spawnTestHelper(t, "TestRecordHelperProcess", "merge", dir, strconv.Itoa(p), strconv.Itoa(merges))
		cmds[p].Stderr = &stderrs[p]
		if err := cmds[p].Start(); err != nil {
			t.Fatal(err)
		}
	}
	for p, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("helper process %d: %v: %s", p, err, stderrs[p].String())
		}
	}

	rec, err := ReadRecord(dir)
	if err != nil {
		t.Fatal(err)
	}
	checkAllKeys(t, rec, "p", procs, merges)
}

// checkAllKeys asserts rec holds <prefix><w>-<i> = i for every writer w and
// merge i, plus the slug written first.
func checkAllKeys(t *testing.T, rec Record, prefix string, writers, merges int) {
	t.Helper()
	if s, _ := rec.String("slug"); s != "run-1" {
		t.Errorf("slug = %q, want run-1: the first write was lost", s)
	}
	missing := 0
	for w := range writers {
		for i := range merges {
			key := fmt.Sprintf("%s%d-%d", prefix, w, i)
			if got, ok := rec.Int(key); !ok || got != int64(i) {
				missing++
			}
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d merged keys lost", missing, writers*merges)
	}
	if len(rec) != writers*merges+1 {
		t.Errorf("run.json has %d keys, want %d", len(rec), writers*merges+1)
	}
}

func TestMergeRecordLockTimeout(t *testing.T) {
	saved := recordLockTimeout
	recordLockTimeout = 100 * time.Millisecond
	t.Cleanup(func() { recordLockTimeout = saved })
	dir := newRunDir(t)
	if err := WriteRecord(dir, Record{"status": "running"}); err != nil {
		t.Fatal(err)
	}
	// Another writer: a separate open file description holding the lock.
	holder, err := os.OpenFile(filepath.Join(dir, recordLockName), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := holder.Close(); err != nil {
			t.Error(err)
		}
	})
	if err := flockFile(holder, unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}

	_, err = MergeRecord(dir, Record{"status": "completed"})
	if !errors.Is(err, ErrRecordLocked) {
		t.Fatalf("MergeRecord() error = %v, want ErrRecordLocked", err)
	}
	if !strings.Contains(err.Error(), "run.json of 'run-1' is still locked") {
		t.Errorf("message = %q", err.Error())
	}

	if err := flockFile(holder, unix.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	if _, err := MergeRecord(dir, Record{"status": "completed"}); err != nil {
		t.Errorf("MergeRecord after the lock was released: %v", err)
	}
}
