package transcript

import (
	"encoding/json"
	"math"
)

// SchemaVersion is the transcript and run-record schema this package writes.
const SchemaVersion = 2

// Event names, as written in every line's "event" key.
const (
	EventRunStart       = "run_start"
	EventAssistant      = "assistant"
	EventToolResult     = "tool_result"
	EventGuardrailBlock = "guardrail_block"
	EventNudge          = "nudge"
	EventSandboxReset   = "sandbox_reset"
	EventVerify         = "verify"
	EventRunEnd         = "run_end"
	EventModelRequest   = "model_request"
	EventModelProgress  = "model_progress"
	EventSetup          = "setup"
)

// Nudge kinds, the values of [Nudge].Kind.
const (
	NudgeTruncated    = "truncated"
	NudgeEmpty        = "empty"
	NudgeTextToolCall = "text_tool_call"
	NudgeStall        = "stall"
	NudgeTimeout      = "timeout"
)

// SandboxNone is the run_start "sandbox" value of a host-mode run; docker
// runs record an object with their settings instead.
const SandboxNone = "none"

// Event is one transcript entry. The [Writer] stamps EventName into the
// line's "event" key, next to "ts", ahead of the event's own fields.
type Event interface {
	EventName() string
}

// payloader is implemented by events whose fields are not their own struct
// fields; the Writer marshals payload() instead of the event.
type payloader interface {
	payload() any
}

// normalizer is implemented by events whose zero values would not match the
// schema (a nil slice where a list is required, an unrounded duration). The
// Writer applies it to a copy, so callers may leave those fields unset.
type normalizer interface {
	normalized() Event
}

// Usage counts the tokens of one reply or, summed, of a whole run.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// StuckOn describes the failing command that tripped the repeat tracker.
type StuckOn struct {
	Command string `json:"command"`
	Output  string `json:"output"` // at most 4000 chars
	Repeats int    `json:"repeats"`
}

// LastToolResult is the most recent tool result of a run, in preview form.
type LastToolResult struct {
	Tool   string `json:"tool"`
	Args   string `json:"args"`   // raw arguments, at most 500 chars
	Result string `json:"result"` // at most 2000 chars
}

// VerifyResult is the outcome of the last --verify round of a run.
type VerifyResult struct {
	Command    string `json:"command"`
	ExitCode   *int   `json:"exit_code"` // nil when the command had no exit code (timeout)
	OutputTail string `json:"output_tail"`
	Rounds     int    `json:"rounds"`
	Passed     bool   `json:"passed"`
	// Tree names the tree the last round judged: the hash of its sealed
	// manifest ("sha256:<hex>"), which the export's tree_hash must equal.
	// Empty when the round never ran on a sealed tree.
	Tree string `json:"tree,omitempty"`
	// Reason says why a round whose command exited 0 did not pass: the
	// tree changed while it ran, or the tree exported is not the one it
	// judged. Empty otherwise.
	Reason string `json:"reason,omitempty"`
}

// IgnoredChange is a git-ignored entry a run's tree held when it was
// sealed: hidden from every diff, so listed for review.
type IgnoredChange struct {
	// Path is the entry's path; a directory's ends in "/" and stands for
	// everything below it.
	Path    string `json:"path"`
	Entries int64  `json:"entries"`
	Bytes   int64  `json:"bytes"`
	// By is "worker" (made or changed after the worker started),
	// "setup" (made by --setup before it) or "run" (either: the tree was
	// rewritten by a `runs export` after the run died, and nothing tells).
	By string `json:"by"`
	// Action is "removed" (the worker's or the run's: taken out before
	// verify and the export) or "kept" (the setup's).
	Action string `json:"action"`
}

// ModeChange is a mode a reviewer should see: a setuid or setgid bit
// (stripped), a world-writable entry, an executable bit gained or lost.
type ModeChange struct {
	Path string `json:"path"`
	// Mode is the mode the entry had, in octal (e.g. "4755").
	Mode string `json:"mode"`
	// Base is the tracked path's mode in the base tree, in octal, when it
	// has one.
	Base string `json:"base,omitempty"`
	// Change says what it is: "setuid/setgid removed", "world-writable",
	// "executable bit added", "executable bit removed", "new executable".
	Change string `json:"change"`
}

// ToolCallRecord is one addressable tool call inside an [Assistant] event.
type ToolCallRecord struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // raw arguments, at most 2000 chars
}

// RunStart is the first line of every transcript.
type RunStart struct {
	Task                string  `json:"task"`
	Model               string  `json:"model"`
	MaxTurns            int     `json:"max_turns"`
	Timeout             int     `json:"timeout"` // whole-run wall clock, seconds
	ContextWindow       int     `json:"context_window"`
	ContextWindowSource string  `json:"context_window_source"`
	SchemaVersion       int     `json:"schema_version"` // 0 is written as SchemaVersion
	Repo                string  `json:"repo"`
	Worktree            string  `json:"worktree"`
	Branch              string  `json:"branch"`
	BranchFrom          *string `json:"branch_from"` // the --branch-from ref, nil when not given
	BaseCommit          string  `json:"base_commit"`
	BaseURL             string  `json:"base_url"`
	DirtyworkVersion    string  `json:"dirtywork_version"`
	Temperature         *Float  `json:"temperature"` // nil when unset: the key is still written, as null
	// Sandbox is SandboxNone or the docker settings object. It is kept
	// untyped so the sandbox package owns that shape; a decoded transcript
	// holds a string or a map[string]any here. nil is written as SandboxNone.
	Sandbox     any     `json:"sandbox"`
	Provider    string  `json:"provider"`
	ResumedFrom *string `json:"resumed_from"` // slug of the resumed run
	Feedback    *string `json:"feedback"`     // reviewer feedback of a resume
	// BaseRef is the ref the lane was branched from. Added after the first
	// schema-2 release, so older transcripts lack it; absent when empty.
	BaseRef string `json:"base_ref,omitempty"`
}

// EventName implements [Event].
func (RunStart) EventName() string { return EventRunStart }

func (e RunStart) normalized() Event {
	if e.SchemaVersion == 0 {
		e.SchemaVersion = SchemaVersion
	}
	if e.Sandbox == nil {
		e.Sandbox = SandboxNone
	}
	e.Sandbox = finiteValues(e.Sandbox)
	return e
}

// ModelRequest is written just before a model call.
type ModelRequest struct {
	Turn            int `json:"turn"` // 1-based turn the request belongs to
	EstPromptTokens int `json:"est_prompt_tokens"`
}

// EventName implements [Event].
func (ModelRequest) EventName() string { return EventModelRequest }

// ModelProgress reports a streaming model call's progress.
type ModelProgress struct {
	Turn       int   `json:"turn"`
	Tokens     int   `json:"tokens"`
	TokensPerS Float `json:"tokens_per_s"`
	// Tail is the end of what the reply has generated so far (text,
	// reasoning, tool-call arguments; at most 240 bytes), so a supervisor
	// watches the model write. Worker text: render it inert.
	Tail string `json:"tail,omitempty"`
}

// EventName implements [Event].
func (ModelProgress) EventName() string { return EventModelProgress }

// Assistant is written for each parsed model reply.
type Assistant struct {
	// Text is the reply text; the engine caps it at 64000 chars plus a
	// marker, in the transcript only.
	Text      string           `json:"text"`
	ToolCalls []ToolCallRecord `json:"tool_calls"` // addressable calls only; nil is written as []
	Usage     *Usage           `json:"usage,omitempty"`
}

// EventName implements [Event].
func (Assistant) EventName() string { return EventAssistant }

func (e Assistant) normalized() Event {
	if e.ToolCalls == nil {
		e.ToolCalls = []ToolCallRecord{}
	}
	return e
}

// ToolResult is written for each executed call (finish included) and for
// each unaddressable tool-call entry (Tool and Args empty).
type ToolResult struct {
	Tool     string `json:"tool"`
	Args     string `json:"args"`   // raw arguments, at most 500 chars; "{}" when raw was empty
	Result   string `json:"result"` // preview, at most 2000 chars
	TimedOut bool   `json:"timed_out,omitempty"`
}

// EventName implements [Event].
func (ToolResult) EventName() string { return EventToolResult }

// GuardrailBlock is written when the deny-list refuses a bash command; it
// precedes that call's [ToolResult].
type GuardrailBlock struct {
	Tool   string         `json:"tool"`
	Args   map[string]any `json:"args"` // validated arguments, injected timeout included
	Reason string         `json:"reason"`
}

// EventName implements [Event].
func (GuardrailBlock) EventName() string { return EventGuardrailBlock }

func (e GuardrailBlock) normalized() Event {
	if e.Args == nil {
		e.Args = map[string]any{}
	}
	if args, ok := finiteValues(e.Args).(map[string]any); ok {
		e.Args = args
	}
	return e
}

// Nudge is written when the engine corrects the model with a user message.
type Nudge struct {
	Kind string `json:"kind"` // one of the Nudge* constants
	Turn int    `json:"turn"` // 1-based
}

// EventName implements [Event].
func (Nudge) EventName() string { return EventNudge }

// SandboxReset is written when a docker sandbox is reset mid-run.
type SandboxReset struct {
	Reason string `json:"reason"`
}

// EventName implements [Event].
func (SandboxReset) EventName() string { return EventSandboxReset }

// Verify is written after each --verify round.
type Verify struct {
	Round    int  `json:"round"`
	ExitCode *int `json:"exit_code"`
	Passed   bool `json:"passed"`
}

// EventName implements [Event].
func (Verify) EventName() string { return EventVerify }

// Setup records the --setup command run before the loop: written as its
// own event (right after run_start) and repeated in run_end.
type Setup struct {
	Command   string `json:"command"`
	ExitCode  *int   `json:"exit_code"`
	Output    string `json:"output"`
	DurationS Float  `json:"duration_s"` // rounded to one decimal when written
}

// EventName implements [Event].
func (Setup) EventName() string { return EventSetup }

func (e Setup) normalized() Event {
	e.DurationS = roundTenth(e.DurationS)
	return e
}

// Artifacts are a run's result fields: what its finalize (or a later
// `runs export`) found. They are defined here once and carried everywhere
// they appear: a workspace's finalize returns them (sandbox.Finalization is
// this type), run_end carries them inline, run.json stores them (see
// ExportFieldsOf) and the runs store reads them back.
type Artifacts struct {
	DiffStat              string   `json:"diff_stat"`
	Untracked             string   `json:"untracked"` // "" in docker mode
	FilesChanged          []string `json:"files_changed"`
	FilesChangedTruncated bool     `json:"files_changed_truncated"`
	PatchPath             *string  `json:"patch_path"` // nil in host mode
	WorktreeBytes         int64    `json:"worktree_bytes"`
	WorktreeFiles         int64    `json:"worktree_files"`
	EscapingSymlinks      []string `json:"escaping_symlinks"`
	DroppedGitEntries     []string `json:"dropped_git_entries"`
	// SkippedSpecialEntries are the FIFOs, sockets and devices the export
	// left out (at most 1000).
	SkippedSpecialEntries []string `json:"skipped_special_entries"`
	// UnexportedEntries are the files and links the export could not
	// bring back (paths past the daemon's PATH_MAX; at most 1000).
	UnexportedEntries []string `json:"unexported_entries"`
	// IgnoredChanges are the git-ignored entries the tree held when it
	// was sealed: the worker's were taken out before verify and the
	// export, the setup's stayed.
	IgnoredChanges []IgnoredChange `json:"ignored_changes"`
	// ModeChanges are the modes a reviewer should see (setuid and setgid
	// bits are stripped).
	ModeChanges []ModeChange `json:"mode_changes"`
	// TreeHash names the tree the run left, as sealed before the export
	// ("sha256:<hex>"; see VerifyResult.Tree); "" when it was not sealed.
	TreeHash     string `json:"tree_hash"`
	ExportStatus string `json:"export_status"` // "n/a" in host mode
	// WatchdogViolation and WatchdogViolationKind are set by a backend
	// whose watchdog stopped the run (docker).
	WatchdogViolation     *string `json:"watchdog_violation"`
	WatchdogViolationKind *string `json:"watchdog_violation_kind"`
	// Egress sums up what the egress proxy decided, nil when the run had
	// no network (additive).
	Egress *Egress `json:"egress,omitempty"`
}

// Egress sums up an egress proxy's decisions (run_end.egress,
// run.json's egress): every request it allowed, refused, or allowed but
// could not reach, the refused hosts (host:port, at most 100, first
// first), and the log holding every decision.
type Egress struct {
	Allowed      int      `json:"allowed"`
	Refused      int      `json:"refused"`
	Failed       int      `json:"failed"`
	RefusedHosts []string `json:"refused_hosts"`
	Log          string   `json:"log"`
	// LogTruncated is set when the log reached its cap and later
	// decisions were only counted.
	LogTruncated bool `json:"log_truncated"`
}

// RunEnd is the last line of a run the runner finished, whatever its status.
type RunEnd struct {
	Status              Status          `json:"status"`
	Turns               int             `json:"turns"`
	DurationS           Float           `json:"duration_s"` // rounded to one decimal when written
	Usage               Usage           `json:"usage"`
	StuckOn             *StuckOn        `json:"stuck_on"`
	LastToolResult      *LastToolResult `json:"last_tool_result"`
	LastAssistantText   *string         `json:"last_assistant_text"`
	Verify              *VerifyResult   `json:"verify"`
	TrimmedTurns        int             `json:"trimmed_turns"`
	Timeouts            int             `json:"timeouts"`
	ContextWindowSource string          `json:"context_window_source"`
	// Artifacts holds the finalize fields, written inline; nil (when
	// finalize raised) leaves them out and FinalizeError says why.
	*Artifacts
	FinalizeError string `json:"finalize_error,omitempty"` // "<ErrorType>: <msg>"
	// Setup and PrefixReuse were added after the first schema-2 release;
	// absent when nil.
	Setup       *Setup `json:"setup,omitempty"`
	PrefixReuse *int   `json:"prefix_reuse,omitempty"`
	// ModelFailure is set when a model request ended the run: what
	// failed (one of the ModelFailure* constants), so a reader tells a
	// server's fault from the model's without parsing messages. Absent
	// otherwise.
	ModelFailure string `json:"model_failure,omitempty"`
}

// What a model request that ended a run failed on (RunEnd.ModelFailure).
const (
	// ModelFailureServer: the server refused or failed the request
	// (unreachable, an HTTP error other than a context overflow).
	ModelFailureServer = "server"
	// ModelFailureMalformed: the server's reply was not the protocol's
	// shape.
	ModelFailureMalformed = "malformed"
	// ModelFailureRequestTimeout: one request outlasted its own deadline
	// before the run's.
	ModelFailureRequestTimeout = "request_timeout"
)

// EventName implements [Event].
func (RunEnd) EventName() string { return EventRunEnd }

func (e RunEnd) normalized() Event {
	e.DurationS = roundTenth(e.DurationS)
	if e.Artifacts != nil {
		a := *e.Artifacts
		a.FilesChanged = nonNilStrings(a.FilesChanged)
		a.EscapingSymlinks = nonNilStrings(a.EscapingSymlinks)
		a.DroppedGitEntries = nonNilStrings(a.DroppedGitEntries)
		a.SkippedSpecialEntries = nonNilStrings(a.SkippedSpecialEntries)
		a.UnexportedEntries = nonNilStrings(a.UnexportedEntries)
		a.IgnoredChanges = nonNilSlice(a.IgnoredChanges)
		a.ModeChanges = nonNilSlice(a.ModeChanges)
		e.Artifacts = &a
	}
	if e.Setup != nil {
		s := *e.Setup
		s.DurationS = roundTenth(s.DurationS)
		e.Setup = &s
	}
	return e
}

// RunEndFailure is the run_end the CLI writes when the runner never returned
// (setup or run failure): only these fields, by contract.
type RunEndFailure struct {
	Status              Status `json:"status"`
	Error               string `json:"error"`
	TrimmedTurns        int    `json:"trimmed_turns"`
	Timeouts            int    `json:"timeouts"`
	ContextWindowSource string `json:"context_window_source"`
}

// EventName implements [Event].
func (RunEndFailure) EventName() string { return EventRunEnd }

// Unknown is an event whose name this version does not know; decoding keeps
// it rather than failing, because the schema grows additively. Writing an
// Unknown writes Fields as the event's fields.
type Unknown struct {
	Name   string
	Fields map[string]json.RawMessage // every key but "ts" and "event", verbatim
}

// EventName implements [Event].
func (e Unknown) EventName() string { return e.Name }

func (e Unknown) payload() any {
	fields := make(map[string]json.RawMessage, len(e.Fields))
	for k, v := range e.Fields {
		if k != "ts" && k != "event" {
			fields[k] = v
		}
	}
	return fields
}

// Compile-time checks that every event type satisfies Event.
var (
	_ Event = RunStart{}
	_ Event = ModelRequest{}
	_ Event = ModelProgress{}
	_ Event = Setup{}
	_ Event = Assistant{}
	_ Event = ToolResult{}
	_ Event = GuardrailBlock{}
	_ Event = Nudge{}
	_ Event = SandboxReset{}
	_ Event = Verify{}
	_ Event = RunEnd{}
	_ Event = RunEndFailure{}
	_ Event = Unknown{}
)

// roundTenth rounds to one decimal, as the schema records durations.
func roundTenth(x Float) Float { return Float(math.Round(float64(x)*10) / 10) }

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// nonNilSlice is s, or an empty slice for nil: a list is never null.
func nonNilSlice[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
