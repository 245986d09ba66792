package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dirtywork/dirtywork/engine/runs"
	"github.com/dirtywork/dirtywork/transcript"
)

// ResultName is the file in a run dir that keeps the run's stdout object,
// exactly as `dirtywork run` prints it, so that whoever did not see the
// run's stdout (a detached run, mission control, `runs wait`) can read it.
// It is written once, atomically, after the sandbox is stopped and the
// transcript closed, and before the run's liveness lock is released: a run
// that is no longer alive either has it or died without a result.
const ResultName = "result.json"

// resultTmpName is where the result is written before its rename.
const resultTmpName = ".result.json.tmp"

// keepResult writes payload's encoding to <runDir>/result.json.
func keepResult(runDir string, payload *Payload) error {
	data, err := EncodePayload(payload)
	if err != nil {
		return fmt.Errorf("encode the result: %w", err)
	}
	tmp := filepath.Join(runDir, resultTmpName)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("keep the result in %s: %w", runDir, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(runDir, ResultName))
	}
	if err != nil {
		_ = os.Remove(tmp) // the error below is the one to report
		return fmt.Errorf("keep the result in %s: %w", runDir, err)
	}
	return nil
}

// ReadResult reads the stdout object a run kept in its run dir (see
// ResultName), as raw JSON ending in a newline. A run that has not ended,
// or died without printing one, has none: the error matches
// fs.ErrNotExist.
func ReadResult(runDir string) ([]byte, error) {
	f, err := os.OpenFile(filepath.Join(runDir, ResultName), os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read-only
	// A result is one line of at most a few hundred KiB (its texts are
	// capped); more is not a result this program wrote.
	data, err := io.ReadAll(io.LimitReader(f, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("read the result of %s: %w", runDir, err)
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("the result of %s is not one JSON object: %w", runDir, err)
	}
	return data, nil
}

// waitPoll is how often WaitRun looks at the liveness lock. A variable so
// tests can shorten it.
var waitPoll = 100 * time.Millisecond

// WaitRun blocks until the run in runDir is no longer alive (its process
// released the liveness lock or died) or ctx ends, whose error it then
// returns. A run dir that disappears while waited on is an error matching
// fs.ErrNotExist.
func WaitRun(ctx context.Context, runDir string) error {
	t := time.NewTicker(waitPoll)
	defer t.Stop()
	for {
		if _, err := os.Stat(runDir); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("run dir %s: %w", runDir, err)
		}
		// A run 0.9.1 started has no lock; its recorded process decides.
		rf, _ := transcript.ReadRun(runDir) // unreadable: no recorded process
		alive, err := runs.PriorAlive(runDir, rf.Record)
		if err != nil {
			return err
		}
		if !alive {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
