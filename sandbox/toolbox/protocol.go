package toolbox

import (
	"encoding/json"
)

// ProtocolVersion is the version of the frames and messages below. A
// server answers a hello of another version with a "version" error, so a
// client never talks to a binary built from other sources. Version 3
// authenticates every frame (frame.go).
const ProtocolVersion = 3

const (
	// maxRequestFrame caps a request's JSON. Text travels as base64 (4/3),
	// so it holds about 12 MiB of text: a write at the 5 MiB file limit,
	// or an edit whose old and new text are both a whole file at that
	// limit, with room to spare. Larger requests never leave the client
	// (ErrRequestTooLarge).
	maxRequestFrame = 16 << 20
	// maxReplyFrame caps a reply's JSON. The largest legitimate reply is
	// bash's: 1 MiB of output, which lossy decoding can triple, so 4 MiB
	// once encoded. The file tools' results are capped at a few thousand
	// characters plus the paths they quote (see maxPathBytes).
	maxReplyFrame = 16 << 20
	// maxPathBytes caps a path, grep pattern or glob the client sends.
	// No file system accepts a path this long (PATH_MAX is 4096), and
	// results quote paths, so the cap also bounds their replies.
	maxPathBytes = 64 << 10
	// maxOutput is how much of a command's merged output is kept; the rest
	// is read and dropped so the command never blocks on a full pipe.
	maxOutput = 1 << 20
	// maxEscapingListed bounds the escaping symlinks a measure reply lists
	// (by count and by total bytes); the totals are exact either way.
	maxEscapingListed      = 1000
	maxEscapingListedBytes = 1 << 20
)

// Request kinds.
const (
	kindHello      = "hello"
	kindReadFile   = "read_file"
	kindWriteFile  = "write_file"
	kindEditFile   = "edit_file"
	kindInsertText = "insert_text"
	kindApplyEdits = "apply_edits"
	kindListDir    = "list_dir"
	kindGrep       = "grep"
	kindBash       = "bash"
	kindMeasure    = "measure"
	kindBudget     = "budget"
	kindShutdown   = "shutdown"
	// kindCancel asks the server to cancel the request whose id it
	// carries. It is the only request without a reply.
	kindCancel = "cancel"
)

// Error kinds a server replies with.
const (
	// errKindBadRequest: the request could not be decoded or is invalid.
	errKindBadRequest = "bad_request"
	// errKindClosedRoot: the tree's root is closed; no call can succeed.
	errKindClosedRoot = "closed_root"
	// errKindBusy: too many requests in flight, or a command already runs.
	errKindBusy = "busy"
	// errKindCanceled: the request was cancelled before it finished.
	errKindCanceled = "canceled"
	// errKindVersion: the client speaks another protocol version.
	errKindVersion = "version"
	// errKindInternal: the server failed in a way no retry fixes.
	errKindInternal = "internal"
)

// request is the envelope of every request.
type request struct {
	ID   uint64          `json:"id"`
	Kind string          `json:"kind"`
	Args json.RawMessage `json:"args,omitempty"`
}

type helloArgs struct {
	Version int `json:"version"`
	// Key is the secret every later frame, both ways, is tagged with
	// (keySize bytes, fresh for each server). It travels only here, on
	// the stream, never in the server's argv or environment.
	Key []byte `json:"key"`
	// MaxBytes and MaxEntries are the tree's caps (0: none), which the
	// server's budget holds the tree to (see budget requests).
	MaxBytes   int64 `json:"max_bytes"`
	MaxEntries int64 `json:"max_entries"`
}

// budgetArgs asks for the budget's verdict; it has no fields.
type budgetArgs struct{}

type readFileArgs struct {
	Path   []byte `json:"path"`
	Offset int    `json:"offset"`
	Limit  int    `json:"limit"`
}

type writeFileArgs struct {
	Path    []byte `json:"path"`
	Content []byte `json:"content"`
}

type editFileArgs struct {
	Path []byte `json:"path"`
	Old  []byte `json:"old"`
	New  []byte `json:"new"`
}

type insertTextArgs struct {
	Path   []byte `json:"path"`
	Anchor []byte `json:"anchor"`
	Text   []byte `json:"text"`
	After  bool   `json:"after"`
}

type wireEdit struct {
	Old []byte `json:"old"`
	New []byte `json:"new"`
}

type applyEditsArgs struct {
	Path  []byte     `json:"path"`
	Edits []wireEdit `json:"edits"`
}

type listDirArgs struct {
	Path []byte `json:"path"`
}

type grepArgs struct {
	Pattern []byte `json:"pattern"`
	Path    []byte `json:"path"`
	Glob    []byte `json:"glob"`
	// TimeoutMS is grep's own timeout; 0 takes fsops' default.
	TimeoutMS int64 `json:"timeout_ms"`
}

type bashArgs struct {
	Command   []byte `json:"command"`
	TimeoutMS int64  `json:"timeout_ms"`
}

type measureArgs struct {
	MaxBytes   int64 `json:"max_bytes"`
	MaxEntries int64 `json:"max_entries"`
}

// reply is the envelope of every reply: exactly one of Result and Error.
type reply struct {
	ID     uint64          `json:"id"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *wireError      `json:"error,omitempty"`
}

type wireError struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// textResult answers the file tools, list_dir and grep.
type textResult struct {
	Text []byte `json:"text"`
}

type bashResult struct {
	ExitCode    int    `json:"exit_code"`
	Output      []byte `json:"output"`
	Capped      bool   `json:"capped"`
	TimedOut    bool   `json:"timed_out"`
	LaunchError string `json:"launch_error"`
	// Leftover counts the command's processes still alive after the
	// server killed what the command left: none, unless one is stuck.
	Leftover int `json:"leftover"`
	// OOMKill is set when the server's cgroup counted an OOM kill while
	// the command ran (only with ServerConfig.OOMEvents).
	OOMKill bool `json:"oom_kill"`
}

type measureResult struct {
	Bytes            int64    `json:"bytes"`
	Entries          int64    `json:"entries"`
	EscapingSymlinks [][]byte `json:"escaping_symlinks"`
	// EscapingTruncated is set when the list was cut at
	// maxEscapingListed entries or maxEscapingListedBytes bytes.
	EscapingTruncated bool   `json:"escaping_truncated"`
	Violation         []byte `json:"violation"`
	// LongPaths are fsops' (measure only; at most 1000).
	LongPaths [][]byte `json:"long_paths"`
}

type helloResult struct {
	Version  int    `json:"version"`
	PID      int    `json:"pid"`
	UID      int    `json:"uid"`
	GID      int    `json:"gid"`
	Root     []byte `json:"root"`
	Dumpable bool   `json:"dumpable"`
}

// emptyResult answers shutdown.
type emptyResult struct{}
