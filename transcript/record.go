package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"time"

	"golang.org/x/sys/unix"
)

const (
	// RecordName is the file name of a run's record inside its run directory.
	RecordName = "run.json"
	// recordTmpName is where a new record is written before it is renamed
	// over run.json. One fixed name is enough: every writer holds the record
	// lock while it uses it.
	recordTmpName = ".run.json.tmp"
	// recordLockName is the file whose flock serializes writers of run.json.
	// It is never removed: deleting a lock file lets two writers lock two
	// different files.
	recordLockName = ".run.json.lock"
	// recordFileMode is the mode of run.json.
	recordFileMode fs.FileMode = 0o600
)

// recordLockTimeout bounds how long a writer waits for others to finish
// with run.json. A variable so tests can shorten it.
var recordLockTimeout = 10 * time.Second

var (
	// ErrCorruptRecord marks a run.json that cannot be read or is not a JSON
	// object.
	ErrCorruptRecord = errors.New("corrupt run.json")
	// ErrRecordLocked marks a run.json whose lock stayed held by another
	// writer for longer than the lock timeout.
	ErrRecordLocked = errors.New("run.json is locked by another writer")
)

// Record is the content of a run's run.json: a JSON object. Numbers read from
// disk are json.Number, so a read-merge-write keeps them exactly as written;
// use Int to read them.
type Record map[string]any

// String returns the string stored under key, and whether there is one.
func (r Record) String(key string) (string, bool) {
	switch s := r[key].(type) {
	case string:
		return s, true
	case Status: // a record built in memory, not yet written
		return string(s), true
	case Verdict:
		return string(s), true
	}
	return "", false
}

// Bool returns the boolean stored under key, and whether there is one.
func (r Record) Bool(key string) (bool, bool) {
	b, ok := r[key].(bool)
	return b, ok
}

// Int returns the integer stored under key, and whether there is one. A
// boolean or a number with a fraction is not an integer.
func (r Record) Int(key string) (int64, bool) {
	v := r[key]
	if n, ok := v.(json.Number); ok {
		i, err := n.Int64()
		return i, err == nil
	}
	if v == nil {
		return 0, false
	}
	rv := reflect.ValueOf(v)
	switch {
	case rv.CanInt():
		return rv.Int(), true
	case rv.CanUint():
		u := rv.Uint()
		return int64(u), u <= math.MaxInt64
	case rv.CanFloat():
		// A float that came through encoding (1.0 is written as 1) reads back
		// as an integer, so accept integral floats held in memory too.
		f := rv.Float()
		if f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
			return 0, false
		}
		return int64(f), true
	default:
		return 0, false
	}
}

// ReadRecord reads <runDir>/run.json. A missing file gives an error matching
// fs.ErrNotExist; a file that cannot be read or is not exactly one JSON object
// gives an error matching ErrCorruptRecord that names the path.
func ReadRecord(runDir string) (Record, error) {
	obj, _, _, err := readRecordFile(runDir)
	return obj, err
}

// readRecordFile reads <runDir>/run.json without following a link, and
// checks it is exactly one JSON object: the object, its bytes, and the
// file's stat when it was read. Its errors are ReadRecord's.
func readRecordFile(runDir string) (Record, []byte, *unix.Stat_t, error) {
	path := filepath.Join(runDir, RecordName)
	slug := filepath.Base(runDir)
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil, fmt.Errorf("read run.json of '%s': %w", slug, err)
	}
	if err != nil {
		return nil, nil, nil, corruptRecord(slug, path, "cannot open it", err)
	}
	defer func() { _ = f.Close() }() // only read: nothing to lose
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, nil, nil, corruptRecord(slug, path, "cannot stat it", err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, nil, nil, corruptRecord(slug, path, "cannot read it", err)
	}
	obj, err := decodeObject(data)
	if err != nil {
		return nil, nil, nil, corruptRecord(slug, path, err.Error(), nil)
	}
	return Record(obj), data, &st, nil
}

// WriteRecord replaces <runDir>/run.json with rec, atomically (a reader sees
// the old record or the new one, never a mix) and under the record lock, so
// it never interleaves with UpdateRecord or MergeRecord. The file is mode
// 0600, indented by two spaces with keys sorted, ends in a newline, keeps
// <, > and & raw, and has non-finite floats written as null.
func WriteRecord(runDir string, rec Record) error {
	unlock, err := lockRecord(runDir)
	if err != nil {
		return err
	}
	defer unlock()
	_, err = writeRecordLocked(runDir, rec)
	return err
}

// UpdateRecord reads run.json, lets fn change the record in place and writes
// it back, all under an exclusive lock shared by every writer in every
// process, so concurrent updates never lose each other's fields. If fn
// returns an error nothing is written and that error is returned. A missing
// or corrupt run.json is an error (see ReadRecord): an update never invents a
// record. It returns the record as written.
func UpdateRecord(runDir string, fn func(Record) error) (Record, error) {
	unlock, err := lockRecord(runDir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	rec, err := ReadRecord(runDir)
	if err != nil {
		return nil, err
	}
	if err := fn(rec); err != nil {
		return nil, err
	}
	return writeRecordLocked(runDir, rec)
}

// MergeRecord sets every top-level key of fields in run.json (a nil value is
// written as null, it does not delete the key), leaving other keys as they
// are; see UpdateRecord. It returns the record as written.
func MergeRecord(runDir string, fields Record) (Record, error) {
	return UpdateRecord(runDir, func(rec Record) error {
		maps.Copy(rec, fields)
		return nil
	})
}

// writeRecordLocked writes rec through the temp file and renames it over
// run.json; the caller holds the record lock.
func writeRecordLocked(runDir string, rec Record) (Record, error) {
	slug := filepath.Base(runDir)
	clean, data, err := encodeRecord(rec)
	if err != nil {
		return nil, fmt.Errorf("encode run.json of '%s': %w", slug, err)
	}
	tmp := filepath.Join(runDir, recordTmpName)
	if err := writeSynced(tmp, data); err != nil {
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("write run.json of '%s': %w", slug, err)
	}
	if err := os.Rename(tmp, filepath.Join(runDir, RecordName)); err != nil {
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("replace run.json of '%s': %w", slug, err)
	}
	// Persisting the rename itself is best effort: the record is complete
	// either way, and some file systems refuse to sync a directory.
	if d, err := os.Open(runDir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return clean, nil
}

// writeSynced writes data to path, which must not be a symlink, with mode
// 0600 and flushes it to disk.
func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|unix.O_NOFOLLOW, recordFileMode)
	if err != nil {
		return err
	}
	// On the failures below the temp file is abandoned, and the first error
	// is the one to report, not the close's.
	// A temp file left behind by a crashed writer keeps its old mode.
	if err := f.Chmod(recordFileMode); err != nil {
		_ = f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// encodeRecord renders rec as run.json bytes (sorted keys, indent 2,
// trailing newline, no HTML escaping, non-finite floats as null) and
// returns the record exactly as encoded.
func encodeRecord(rec Record) (Record, []byte, error) {
	if rec == nil {
		rec = Record{}
	}
	compact, err := marshalJSON(finiteValues(map[string]any(rec)))
	if err != nil {
		return nil, nil, err
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, compact, "", "  "); err != nil {
		return nil, nil, err
	}
	buf.WriteByte('\n')
	dec := json.NewDecoder(bytes.NewReader(compact))
	dec.UseNumber()
	var written Record
	if err := dec.Decode(&written); err != nil {
		return nil, nil, err
	}
	return written, buf.Bytes(), nil
}

// lockRecord takes the exclusive record lock of runDir, waiting at most
// recordLockTimeout, and returns the function that releases it.
func lockRecord(runDir string) (func(), error) {
	slug := filepath.Base(runDir)
	path := filepath.Join(runDir, recordLockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, recordFileMode)
	if err != nil {
		return nil, fmt.Errorf("open the lock of run.json of '%s': %w", slug, err)
	}
	// Poll rather than block: a blocking flock cannot be abandoned when the
	// timeout passes. Holders keep the lock for one small write, so a short
	// capped backoff wastes little time.
	deadline := time.Now().Add(recordLockTimeout)
	wait := time.Millisecond
	for {
		err := flockFile(f, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() {
				_ = flockFile(f, unix.LOCK_UN)
				_ = f.Close()
			}, nil
		}
		// The lock file is never written: closing it loses nothing, and the
		// lock error is the one to report.
		if !errors.Is(err, unix.EWOULDBLOCK) {
			_ = f.Close()
			return nil, fmt.Errorf("lock run.json of '%s': %w", slug, err)
		}
		if time.Now().After(deadline) {
			_ = f.Close()
			return nil, &runError{
				kind: ErrRecordLocked,
				msg: fmt.Sprintf("run.json of '%s' is still locked by another writer after %s (lock file %s)",
					slug, recordLockTimeout, path),
			}
		}
		time.Sleep(wait)
		wait = min(2*wait, 10*time.Millisecond)
	}
}

// corruptRecord builds the ErrCorruptRecord error for run.json at path.
func corruptRecord(slug, path, detail string, cause error) error {
	msg := fmt.Sprintf("run.json of '%s' is corrupt: %s: %s", slug, path, detail)
	if cause != nil {
		msg += ": " + cause.Error()
	}
	return &runError{kind: ErrCorruptRecord, msg: msg, cause: cause}
}

// jsonKind names the JSON type of a decoded value, for error messages.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	default:
		return fmt.Sprintf("%T", v)
	}
}
