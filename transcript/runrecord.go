package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
)

// RunRecord is run.json, typed: every key of the machine contract that
// dirtywork reads. Keys it does not know stay in the file untouched (writes
// merge into the stored object). A key whose value has the wrong type
// reads as absent, and Run.Warning says which.
type RunRecord struct {
	SchemaVersion       int     `json:"schema_version"`
	Status              Status  `json:"status"`
	Slug                string  `json:"slug"`
	Repo                string  `json:"repo"`
	Worktree            string  `json:"worktree"`
	Branch              string  `json:"branch"`
	BaseCommit          string  `json:"base_commit"`
	BaseRef             string  `json:"base_ref"`
	BaseBranch          string  `json:"base_branch"`
	Task                string  `json:"task"`
	Model               string  `json:"model"`
	Provider            string  `json:"provider"`
	ContextWindow       *int    `json:"context_window"`
	ContextWindowSource string  `json:"context_window_source"`
	Usage               *Usage  `json:"usage"`
	BranchFromRun       *string `json:"branch_from_run"`
	Feedback            *string `json:"feedback"`
	ResumedFrom         *string `json:"resumed_from"`
	ResumedBy           *string `json:"resumed_by"`
	VerifyCommand       *string `json:"verify_command"`
	VerifyRounds        *int    `json:"verify_rounds"`
	VerifyTimeout       *int    `json:"verify_timeout"`
	Container           *string `json:"container"`
	Volume              *string `json:"volume"`
	Image               *string `json:"image"`
	ImageDigest         *string `json:"image_digest"`
	ImagePinned         bool    `json:"image_pinned"`
	HostPID             *int64  `json:"host_pid"`
	Started             string  `json:"started"`
	Ended               string  `json:"ended"`
	Sandbox             string  `json:"sandbox"`
	AllowCommit         bool    `json:"allow_commit"`
	// SealBaseline is when the worker's own changes began (RFC 3339,
	// nanoseconds): a crashed host run's tree is sealed against it.
	SealBaseline string `json:"seal_baseline"`

	// The result fields, defined once (Artifacts); untracked
	// is run_end's alone and stays empty here.
	Artifacts
	FinalizeError     *string         `json:"finalize_error"`
	StuckOn           *StuckOn        `json:"stuck_on"`
	LastToolResult    *LastToolResult `json:"last_tool_result"`
	LastAssistantText *string         `json:"last_assistant_text"`
	Verify            *VerifyResult   `json:"verify"`
	Turns             *int            `json:"turns"`
	TrimmedTurns      *int            `json:"trimmed_turns"`
	Timeouts          *int            `json:"timeouts"`
	Error             *string         `json:"error"`

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

// RunFile is run.json as read: the typed record, a warning naming a key
// whose value had the wrong type (that key reads as absent), and the
// file's identity when read, so a watcher tells a rewrite apart.
type RunFile struct {
	Record  RunRecord
	Warning string
	Size    int64
	ModTime int64 // nanoseconds
	Ino     uint64
}

// ReadRun reads <runDir>/run.json, typed. A missing file gives an error
// matching fs.ErrNotExist; a file that cannot be read or is not exactly one
// JSON object gives an error matching ErrCorruptRecord that names the path.
// A key of the wrong type is a warning, not a failure, so one bad key never
// hides a run.
func ReadRun(runDir string) (RunFile, error) {
	_, data, st, err := readRecordFile(runDir)
	if err != nil {
		return RunFile{}, err
	}
	rf := RunFile{Size: st.Size, ModTime: st.Mtim.Nano(), Ino: st.Ino}
	rf.Record, rf.Warning = decodeRun(data)
	return rf, nil
}

// decodeObject decodes data as exactly one JSON object.
func decodeObject(data []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("unexpected data after the JSON object")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not a JSON object (found %s)", jsonKind(v))
	}
	return obj, nil
}

// decodeRun decodes a run.json object known to be one. A key of the wrong
// type reads as absent (encoding/json would leave a pointer field set to
// its zero value), and the warning names every such key.
func decodeRun(data []byte) (RunRecord, string) {
	var rec RunRecord
	err := json.Unmarshal(data, &rec)
	var typeErr *json.UnmarshalTypeError
	if !errors.As(err, &typeErr) {
		return rec, ""
	}
	// Key by key, each tried alone first, so a bad one leaves no trace.
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(data, &fields) // an object: decodeObject said so
	rec = RunRecord{}
	var bad []string
	for k, v := range fields {
		one, _ := json.Marshal(map[string]json.RawMessage{k: v})
		var probe RunRecord
		if json.Unmarshal(one, &probe) != nil {
			bad = append(bad, k)
			continue
		}
		_ = json.Unmarshal(one, &rec)
	}
	slices.Sort(bad)
	switch len(bad) {
	case 0:
		// The bad value was an earlier copy of a repeated key: the last
		// one counts (as everywhere else run.json is read), and it is good.
		return rec, ""
	case 1:
		return rec, fmt.Sprintf("run.json key %q is not of the expected type", bad[0])
	}
	return rec, fmt.Sprintf("run.json keys %q are not of the expected type", bad)
}

// Patch merges fields, a struct of run.json keys (the *Fields types of
// this package), into <runDir>/run.json under the record lock: every key
// fields marshals is written, explicit nulls included; every other key
// stays as it was, unknown ones too. It returns the record as written.
func Patch(runDir string, fields ...any) (RunRecord, error) {
	m, err := patchMap(fields)
	if err != nil {
		return RunRecord{}, err
	}
	written, err := MergeRecord(runDir, m)
	if err != nil {
		return RunRecord{}, err
	}
	return typed(written), nil
}

// UpdateRun reads <runDir>/run.json under the record lock, hands fn the
// typed record, and merges the fields fn returns as Patch does (nothing is
// written when fn returns none). An error from fn leaves the file as it was.
func UpdateRun(runDir string, fn func(RunRecord) ([]any, error)) (RunRecord, error) {
	written, err := UpdateRecord(runDir, func(raw Record) error {
		patches, err := fn(typed(raw))
		if err != nil || len(patches) == 0 {
			return err
		}
		m, err := patchMap(patches)
		if err != nil {
			return err
		}
		for k, v := range m {
			raw[k] = v
		}
		return nil
	})
	if err != nil {
		return RunRecord{}, err
	}
	return typed(written), nil
}

// CreateRun writes <runDir>/run.json as a run starts: exactly start's keys.
func CreateRun(runDir string, start RunStartFields) error {
	m, err := patchMap([]any{start})
	if err != nil {
		return err
	}
	return WriteRecord(runDir, m)
}

// patchMap is the run.json keys the fields structs marshal to, later ones
// winning.
func patchMap(fields []any) (Record, error) {
	out := Record{}
	for _, f := range fields {
		data, err := marshalJSON(f)
		if err != nil {
			return nil, fmt.Errorf("encode run.json fields: %w", err)
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			return nil, fmt.Errorf("encode run.json fields: %T is not an object", f)
		}
		for k, v := range m {
			out[k] = v
		}
	}
	return out, nil
}

// typed is a decoded run.json object as a RunRecord (a key of the wrong
// type reads as absent).
func typed(raw Record) RunRecord {
	data, err := marshalJSON(finiteValues(map[string]any(raw)))
	if err != nil {
		return RunRecord{}
	}
	rec, _ := decodeRun(data)
	return rec
}
