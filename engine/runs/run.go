package runs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/dirtywork/dirtywork/transcript"
)

// Status is a run's status (transcript owns the list).
type Status = transcript.Status

// Verdict is a reviewer's judgement of a run (transcript owns the list).
type Verdict = transcript.Verdict

// Record is run.json, typed: every key of the machine contract this
// package reads. Keys it does not know stay in the file untouched (writes
// merge into the stored object). A key whose value has the wrong type
// reads as absent, and Run.Warning says which.
type Record struct {
	SchemaVersion       int               `json:"schema_version"`
	Status              Status            `json:"status"`
	Slug                string            `json:"slug"`
	Repo                string            `json:"repo"`
	Worktree            string            `json:"worktree"`
	Branch              string            `json:"branch"`
	BaseCommit          string            `json:"base_commit"`
	BaseRef             string            `json:"base_ref"`
	BaseBranch          string            `json:"base_branch"`
	Task                string            `json:"task"`
	Model               string            `json:"model"`
	Provider            string            `json:"provider"`
	ContextWindow       *int              `json:"context_window"`
	ContextWindowSource string            `json:"context_window_source"`
	Usage               *transcript.Usage `json:"usage"`
	BranchFromRun       *string           `json:"branch_from_run"`
	Feedback            *string           `json:"feedback"`
	ResumedFrom         *string           `json:"resumed_from"`
	ResumedBy           *string           `json:"resumed_by"`
	VerifyCommand       *string           `json:"verify_command"`
	VerifyRounds        *int              `json:"verify_rounds"`
	VerifyTimeout       *int              `json:"verify_timeout"`
	Container           *string           `json:"container"`
	Volume              *string           `json:"volume"`
	Image               *string           `json:"image"`
	ImageDigest         *string           `json:"image_digest"`
	HostPID             *int64            `json:"host_pid"`
	Started             string            `json:"started"`
	Ended               string            `json:"ended"`
	Sandbox             string            `json:"sandbox"`
	AllowCommit         bool              `json:"allow_commit"`

	// The result fields, defined once (transcript.Artifacts); untracked
	// is run_end's alone and stays empty here.
	transcript.Artifacts
	FinalizeError     *string                    `json:"finalize_error"`
	StuckOn           *transcript.StuckOn        `json:"stuck_on"`
	LastToolResult    *transcript.LastToolResult `json:"last_tool_result"`
	LastAssistantText *string                    `json:"last_assistant_text"`
	Verify            *transcript.VerifyResult   `json:"verify"`
	Turns             *int                       `json:"turns"`
	TrimmedTurns      *int                       `json:"trimmed_turns"`
	Timeouts          *int                       `json:"timeouts"`
	Error             *string                    `json:"error"`

	// Review, written by Verdict, Accept and Merge.
	Verdict        Verdict  `json:"verdict"`
	Note           *string  `json:"note"`
	Reviewer       *string  `json:"reviewer"`
	VerdictAt      string   `json:"verdict_at"`
	ReviewSeconds  *float64 `json:"review_seconds"`
	TimeToVerdictS *float64 `json:"time_to_verdict_s"`
	AcceptedCommit string   `json:"accepted_commit"`
	AcceptedFiles  []string `json:"accepted_files"`
	AcceptedAt     string   `json:"accepted_at"`
	MergedInto     string   `json:"merged_into"`
	MergeCommit    string   `json:"merge_commit"`
	MergedAt       string   `json:"merged_at"`
	ParkedRef      string   `json:"parked_ref"`
}

// Run is one run of the store: where it lives, its record, and whether
// its process is alive.
type Run struct {
	// Slug names the run; Dir is its run directory.
	Slug, Dir string
	// Record is run.json, typed. It is the zero Record when Err is set.
	Record Record
	// Err is set when run.json cannot be read or is not a JSON object;
	// such a run is listed all the same, so it can be cleaned.
	Err error
	// Warning names run.json keys whose values had the wrong type.
	Warning string
	// Alive is true only while the run's process holds its liveness lock.
	Alive bool
	// Leftovers is what exists of the run outside its run dir; List fills
	// it when asked to.
	Leftovers *Leftovers
	// stamp is run.json's size and mtime as read, for Watch.
	stamp fileStamp
}

// Crashed reports a run recorded as running whose process is gone.
func (r *Run) Crashed() bool {
	return r.Err == nil && r.Record.Status == transcript.StatusRunning && !r.Alive
}

// Str returns s's value, or "" for nil.
func Str(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// fileStamp tells whether a file changed between two reads.
type fileStamp struct {
	size  int64
	mtime int64
	ino   uint64
}

// errNotObject marks a run.json that is valid JSON but not an object.
var errNotObject = errors.New("not a JSON object")

// readRecord reads and decodes <dir>/run.json. A missing file matches
// fs.ErrNotExist; a file that is not one JSON object matches
// transcript.ErrCorruptRecord. Wrong-typed keys are reported in warning.
func readRecord(dir string) (rec Record, warning string, stamp fileStamp, err error) {
	path := filepath.Join(dir, transcript.RecordName)
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Record{}, "", stamp, err
		}
		return Record{}, "", stamp, corrupt(dir, err)
	}
	defer func() { _ = f.Close() }() // read only
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err == nil {
		stamp = fileStamp{size: st.Size, mtime: st.Mtim.Nano(), ino: st.Ino}
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return Record{}, "", stamp, corrupt(dir, err)
	}
	rec, warning, err = decodeRecord(data)
	if err != nil {
		return Record{}, "", stamp, corrupt(dir, err)
	}
	return rec, warning, stamp, nil
}

// decodeRecord decodes run.json bytes. encoding/json goes on past a value
// of the wrong type and reports the first; that is a warning, not a
// failure, so one bad key never hides a run.
func decodeRecord(data []byte) (Record, string, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		if !json.Valid(data) {
			return Record{}, "", errors.New("invalid JSON")
		}
		return Record{}, "", errNotObject
	}
	var rec Record
	err := json.Unmarshal(data, &rec)
	var typeErr *json.UnmarshalTypeError
	switch {
	case err == nil:
		return rec, "", nil
	case errors.As(err, &typeErr):
		return rec, fmt.Sprintf("run.json key %q is not of the expected type", typeErr.Field), nil
	default:
		return Record{}, "", fmt.Errorf("invalid JSON: %w", err)
	}
}

// CorruptError is a run.json that cannot be read or is not a JSON object.
type CorruptError struct {
	Slug, Path string
	Err        error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("run.json of '%s' is unreadable: %s: %v", e.Slug, e.Path, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// Is makes a CorruptError match transcript.ErrCorruptRecord.
func (e *CorruptError) Is(target error) bool { return target == transcript.ErrCorruptRecord }

func corrupt(dir string, err error) error {
	return &CorruptError{Slug: filepath.Base(dir), Path: filepath.Join(dir, transcript.RecordName), Err: err}
}
