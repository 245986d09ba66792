package transcript

// The writes of run.json, one struct each: what a writer sets, typed.
// Patch and UpdateRun merge them into the stored object (every key a
// struct marshals is written, explicit nulls included; every other key
// stays), CreateRun writes the first.

// RunStartFields is run.json as a run starts (E-13): the run's identity,
// its settings, and nulls for what the sandbox fills in later.
type RunStartFields struct {
	SchemaVersion       int     `json:"schema_version"`
	Status              Status  `json:"status"`
	Slug                string  `json:"slug"`
	Repo                string  `json:"repo"`
	Worktree            string  `json:"worktree"`
	Branch              string  `json:"branch"`
	BaseCommit          string  `json:"base_commit"`
	BaseRef             string  `json:"base_ref"`
	BaseBranch          *string `json:"base_branch"`
	Task                string  `json:"task"`
	Model               string  `json:"model"`
	Provider            string  `json:"provider"`
	ContextWindow       int     `json:"context_window"`
	ContextWindowSource string  `json:"context_window_source"`
	BranchFromRun       *string `json:"branch_from_run"`
	Feedback            *string `json:"feedback"`
	ResumedFrom         *string `json:"resumed_from"`
	VerifyCommand       *string `json:"verify_command"`
	VerifyRounds        int     `json:"verify_rounds"`
	VerifyTimeout       int     `json:"verify_timeout"`
	Container           *string `json:"container"`
	Volume              *string `json:"volume"`
	Image               *string `json:"image"`
	ImageDigest         *string `json:"image_digest"`
	ImagePinned         bool    `json:"image_pinned"`
	HostPID             int     `json:"host_pid"`
	Started             string  `json:"started"`
	Sandbox             string  `json:"sandbox"`
	AllowCommit         bool    `json:"allow_commit"`
}

// LaneFields names the lane a run works in, when it differs from the one
// run.json planned.
type LaneFields struct {
	Worktree   string `json:"worktree"`
	Branch     string `json:"branch"`
	BaseCommit string `json:"base_commit"`
}

// ContainerFields names a docker run's container, volume and image.
type ContainerFields struct {
	Container   string  `json:"container"`
	Volume      string  `json:"volume"`
	Image       string  `json:"image"`
	ImageDigest *string `json:"image_digest"`
	ImagePinned bool    `json:"image_pinned"`
}

// JailFields is what a host run's jail set up (the sandbox's own
// description).
type JailFields struct {
	Jail any `json:"jail"`
}

// EgressFields sums up what a run's egress proxy decided.
type EgressFields struct {
	Egress *Egress `json:"egress"`
}

// SealBaselineFields records when the worker's own changes began.
type SealBaselineFields struct {
	SealBaseline string `json:"seal_baseline"`
}

// ResumedByFields records the run that resumed this one (null: none).
type ResumedByFields struct {
	ResumedBy *string `json:"resumed_by"`
}

// StatusFields sets a run's status alone.
type StatusFields struct {
	Status Status `json:"status"`
}

// FailureFields is run.json's end of a run whose runner never returned
// (E-18). ExportStatus is there when a docker finalize ran on the way
// out, FinalizeError when evidence was lost.
type FailureFields struct {
	Status              Status  `json:"status"`
	Error               string  `json:"error"`
	TrimmedTurns        int     `json:"trimmed_turns"`
	Timeouts            int     `json:"timeouts"`
	ContextWindowSource string  `json:"context_window_source"`
	Ended               string  `json:"ended"`
	ExportStatus        *string `json:"export_status,omitempty"`
	FinalizeError       *string `json:"finalize_error,omitempty"`
}

// EndFields is run.json's end of a run the loop ended; the finalize's
// fields come beside it (ExportFields, or NoExportFields when none ran).
type EndFields struct {
	Status                Status          `json:"status"`
	FinalizeError         *string         `json:"finalize_error"`
	StuckOn               *StuckOn        `json:"stuck_on"`
	LastToolResult        *LastToolResult `json:"last_tool_result"`
	LastAssistantText     *string         `json:"last_assistant_text"`
	Verify                *VerifyResult   `json:"verify"`
	Turns                 int             `json:"turns"`
	TrimmedTurns          int             `json:"trimmed_turns"`
	Timeouts              int             `json:"timeouts"`
	ContextWindowSource   string          `json:"context_window_source"`
	Ended                 string          `json:"ended"`
	Usage                 Usage           `json:"usage"`
	WatchdogViolation     *string         `json:"watchdog_violation"`
	WatchdogViolationKind *string         `json:"watchdog_violation_kind"`
}

// NoExportFields is what run.json says of a run's files when no finalize
// ran: none changed.
type NoExportFields struct {
	FilesChanged          []string `json:"files_changed"`
	FilesChangedTruncated bool     `json:"files_changed_truncated"`
}

// ExportFields are the run.json keys a finalize or an export sets:
// every artifact but untracked (run_end only) and the watchdog's pair (set
// by the run's end alone), lists never null, egress only when the run had
// a proxy.
type ExportFields struct {
	DiffStat              string          `json:"diff_stat"`
	ExportStatus          string          `json:"export_status"`
	PatchPath             *string         `json:"patch_path"`
	WorktreeBytes         int64           `json:"worktree_bytes"`
	WorktreeFiles         int64           `json:"worktree_files"`
	EscapingSymlinks      []string        `json:"escaping_symlinks"`
	DroppedGitEntries     []string        `json:"dropped_git_entries"`
	SkippedSpecialEntries []string        `json:"skipped_special_entries"`
	UnexportedEntries     []string        `json:"unexported_entries"`
	FilesChanged          []string        `json:"files_changed"`
	FilesChangedTruncated bool            `json:"files_changed_truncated"`
	IgnoredChanges        []IgnoredChange `json:"ignored_changes"`
	ModeChanges           []ModeChange    `json:"mode_changes"`
	TreeHash              string          `json:"tree_hash"`
	Egress                *Egress         `json:"egress,omitempty"`
}

// ExportFieldsOf are a's run.json keys.
func ExportFieldsOf(a *Artifacts) ExportFields {
	return ExportFields{
		DiffStat: a.DiffStat, ExportStatus: a.ExportStatus, PatchPath: a.PatchPath,
		WorktreeBytes: a.WorktreeBytes, WorktreeFiles: a.WorktreeFiles,
		EscapingSymlinks: nonNilStrings(a.EscapingSymlinks), DroppedGitEntries: nonNilStrings(a.DroppedGitEntries),
		SkippedSpecialEntries: nonNilStrings(a.SkippedSpecialEntries), UnexportedEntries: nonNilStrings(a.UnexportedEntries),
		FilesChanged: nonNilStrings(a.FilesChanged), FilesChangedTruncated: a.FilesChangedTruncated,
		IgnoredChanges: nonNilSlice(a.IgnoredChanges), ModeChanges: nonNilSlice(a.ModeChanges),
		TreeHash: a.TreeHash, Egress: a.Egress,
	}
}

// SealFields are what sealing a crashed run's tree found, added to what
// the run had recorded.
type SealFields struct {
	DroppedGitEntries     []string        `json:"dropped_git_entries"`
	SkippedSpecialEntries []string        `json:"skipped_special_entries"`
	EscapingSymlinks      []string        `json:"escaping_symlinks"`
	IgnoredChanges        []IgnoredChange `json:"ignored_changes"`
	ModeChanges           []ModeChange    `json:"mode_changes"`
}

// DroppedGitEntriesFields records the repositories moved out of a tree.
type DroppedGitEntriesFields struct {
	DroppedGitEntries []string `json:"dropped_git_entries"`
}

// VerdictFields is a reviewer's verdict.
type VerdictFields struct {
	Verdict        Verdict  `json:"verdict"`
	Note           *string  `json:"note"`
	VerdictAt      string   `json:"verdict_at"`
	ReviewSeconds  *float64 `json:"review_seconds"`
	TimeToVerdictS *float64 `json:"time_to_verdict_s"`
	Reviewer       string   `json:"reviewer"`
}

// AcceptFields records the commit an accept made.
type AcceptFields struct {
	AcceptedCommit string   `json:"accepted_commit"`
	AcceptedFiles  []string `json:"accepted_files"`
	AcceptedAt     string   `json:"accepted_at"`
}

// MergeFields records where a merge went.
type MergeFields struct {
	MergedInto  string `json:"merged_into"`
	MergeCommit string `json:"merge_commit"`
	MergedAt    string `json:"merged_at"`
}

// ParkedFields names the ref a cleanup parked the run's work under.
type ParkedFields struct {
	ParkedRef string `json:"parked_ref"`
}
