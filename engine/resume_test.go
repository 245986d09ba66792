package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/engine/provider"
	"github.com/dirtywork/dirtywork/engine/runs"
	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/docker"
	"github.com/dirtywork/dirtywork/sandbox/docker/workspace"
	"github.com/dirtywork/dirtywork/transcript"
)

// exportingDocker is a fake docker workspace whose Finalize runs export
// on the lane, as the real export writes the container's tree into it.
type exportingDocker struct {
	fakeDocker
	export func(lane string) (sandbox.Finalization, error)
}

func (w *exportingDocker) Finalize(context.Context) (sandbox.Finalization, error) {
	w.finalize++
	return w.export(w.cfg.Worktree)
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

func writeIn(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// priorDockerRun makes a docker run that ended completed with prior.txt
// exported into its lane, and returns the runner and the run's payload.
func priorDockerRun(t *testing.T) (*Runner, *Payload, *dockerOpener) {
	t.Helper()
	repo := dockerRepo(t)
	op := &dockerOpener{}
	prov := &scriptedProvider{}
	r, _ := dockerRunner(t, prov, op.open)
	op.export = func(lane string) (sandbox.Finalization, error) {
		writeIn(t, lane, "app.txt", "one\n")
		writeIn(t, lane, "prior.txt", "prior work\n")
		return sandbox.Finalization{ExportStatus: "ok", FilesChanged: []string{"prior.txt"}}, nil
	}
	spec := dockerSpec(repo)
	spec.Docker.Setup = ""
	p, err := r.Run(t.Context(), spec)
	if err != nil || p.Status != transcript.StatusCompleted {
		t.Fatalf("prior run: %+v %v", p, err)
	}
	return r, p, op
}

// scriptedProvider finishes every run at its first turn.
type scriptedProvider struct{ fakeProvider }

func (*scriptedProvider) Chat(context.Context, provider.Request) (provider.Response, error) {
	return calls(call("f", "finish", `{"summary":"done"}`)), nil
}

// dockerOpener opens exportingDockers and keeps the last one.
type dockerOpener struct {
	ws      *exportingDocker
	export  func(lane string) (sandbox.Finalization, error)
	openErr error
}

func (o *dockerOpener) open(_ context.Context, cfg workspace.Config) (dockerWorkspace, error) {
	if o.openErr != nil {
		return nil, o.openErr
	}
	o.ws = &exportingDocker{fakeDocker: fakeDocker{cfg: cfg}, export: o.export}
	return o.ws, nil
}

func resumeReq(slug string) ResumeRequest {
	spec := dockerSpec("")
	spec.Docker.Setup = ""
	return ResumeRequest{Target: slug, Feedback: "more", HasFeedback: true, Spec: spec}
}

// TestDockerResumeStashesThePriorWorkAroundTheExport: RE-8 and RE-9. The
// container is told it resumes (seed, no baseline); at the export the
// lane holds only .git and the prior work sits in the stash; a done export
// removes the stash, every other outcome puts the prior work back.
func TestDockerResumeStashesThePriorWorkAroundTheExport(t *testing.T) {
	for _, tc := range []struct {
		name   string
		export func(t *testing.T, lane string) (sandbox.Finalization, error)
		want   []string // the lane's entries afterwards
		status transcript.Status
	}{
		{"done", func(t *testing.T, lane string) (sandbox.Finalization, error) {
			writeIn(t, lane, "app.txt", "one\n")
			writeIn(t, lane, "prior.txt", "prior work\n")
			writeIn(t, lane, "new.txt", "new work\n")
			return sandbox.Finalization{ExportStatus: "ok"}, nil
		}, []string{".git", "app.txt", "new.txt", "prior.txt"}, transcript.StatusCompleted},
		{"failed", func(t *testing.T, lane string) (sandbox.Finalization, error) {
			writeIn(t, lane, "half.txt", "part of a refused tree\n")
			return sandbox.Finalization{ExportStatus: "export_failed: too many files"}, nil
		}, []string{".git", "app.txt", "prior.txt"}, transcript.StatusExportFailed},
		{"error", func(*testing.T, string) (sandbox.Finalization, error) {
			return sandbox.Finalization{}, errors.New("the daemon went away")
		}, []string{".git", "app.txt", "prior.txt"}, transcript.StatusExportFailed},
		{"panic", func(*testing.T, string) (sandbox.Finalization, error) {
			panic("export blew up")
		}, []string{".git", "app.txt", "prior.txt"}, transcript.StatusExportFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, prior, op := priorDockerRun(t)
			wt := prior.Worktree
			var sawStash, sawLane []string
			op.export = func(lane string) (sandbox.Finalization, error) {
				sawLane = names(t, lane)
				stashes, _ := filepath.Glob(lane + runs.PreResumeMarker + "*")
				if len(stashes) == 1 {
					sawStash = names(t, stashes[0])
				}
				return tc.export(t, lane)
			}
			p, err := r.Resume(t.Context(), resumeReq(filepath.Base(prior.RunDir)))
			if err != nil {
				t.Fatal(err)
			}
			if p.Status != tc.status || p.Worktree != wt || *p.ResumedFrom != filepath.Base(prior.RunDir) {
				t.Fatalf("payload %+v", p)
			}
			cfg := op.ws.cfg
			if !cfg.Resume || cfg.Worktree != wt || cfg.Branch != prior.Branch || cfg.BaseCommit != prior.BaseCommit {
				t.Fatalf("workspace config %+v", cfg)
			}
			if !slices.Equal(sawLane, []string{".git"}) || !slices.Equal(sawStash, []string{"app.txt", "prior.txt"}) {
				t.Fatalf("at the export the lane held %v and the stash %v", sawLane, sawStash)
			}
			if got := names(t, wt); !slices.Equal(got, tc.want) {
				t.Fatalf("the lane afterwards: %v, want %v", got, tc.want)
			}
			if data, _ := os.ReadFile(filepath.Join(wt, "prior.txt")); string(data) != "prior work\n" {
				t.Fatalf("prior.txt = %q", data)
			}
			if stashes, _ := filepath.Glob(wt + runs.PreResumeMarker + "*"); len(stashes) != 0 {
				t.Fatalf("stash left: %v", stashes)
			}
		})
	}
}

// TestDockerResumeNeverUsesSomeoneElsesStash: when the stash's name is
// taken, nothing is moved and the export meets the prior work in the lane
// (the real export refuses a lane that is not empty).
func TestDockerResumeNeverUsesSomeoneElsesStash(t *testing.T) {
	r, prior, op := priorDockerRun(t)
	wt := prior.Worktree
	var sawLane []string
	op.export = func(lane string) (sandbox.Finalization, error) {
		sawLane = names(t, lane)
		return sandbox.Finalization{ExportStatus: "export_failed: worktree not empty"}, nil
	}
	// The stash's name becomes known once the run exists; make it taken
	// right then, as a stranger racing the resume would.
	r.OnStarted = func(s Started) {
		if err := os.Mkdir(wt+runs.PreResumeMarker+s.Slug, 0o700); err != nil {
			t.Error(err)
		}
		writeIn(t, wt+runs.PreResumeMarker+s.Slug, "theirs.txt", "not ours\n")
	}
	p, err := r.Resume(t.Context(), resumeReq(filepath.Base(prior.RunDir)))
	if err != nil {
		t.Fatal(err)
	}
	if p.Status != transcript.StatusExportFailed || !slices.Equal(sawLane, []string{".git", "app.txt", "prior.txt"}) {
		t.Fatalf("status %s, lane at the export %v", p.Status, sawLane)
	}
	if got := names(t, wt+runs.PreResumeMarker+filepath.Base(p.RunDir)); !slices.Equal(got, []string{"theirs.txt"}) {
		t.Fatalf("the stranger's directory now holds %v", got)
	}
}

// TestResumeSetupFailureKeepsTheWorktree: RE-6. A resume whose sandbox
// cannot start ends as sandbox_error and never removes the worktree or the
// branch, which are the prior run's.
func TestResumeSetupFailureKeepsTheWorktree(t *testing.T) {
	r, prior, op := priorDockerRun(t)
	op.openErr = &sandbox.SandboxError{Op: "start the docker sandbox", Err: errors.New("no space left on device")}
	p, err := r.Resume(t.Context(), resumeReq(filepath.Base(prior.RunDir)))
	if err != nil {
		t.Fatal(err)
	}
	if p.Status != transcript.StatusSandboxError {
		t.Fatalf("payload %+v", p)
	}
	if got := names(t, prior.Worktree); !slices.Equal(got, []string{".git", "app.txt", "prior.txt"}) {
		t.Fatalf("the worktree after a failed resume: %v", got)
	}
	out, err := isolatedGit(prior.Worktree, "rev-parse", "--abbrev-ref", "HEAD").Output()
	if err != nil || strings.TrimSpace(string(out)) != prior.Branch {
		t.Fatalf("the branch: %q %v", out, err)
	}
	rec, err := transcript.ReadRecord(prior.RunDir)
	if err != nil || rec["resumed_by"] != filepath.Base(p.RunDir) {
		t.Fatalf("prior resumed_by %v (%v)", rec["resumed_by"], err)
	}
}

func TestTranscriptTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), transcript.TranscriptName)
	tw, err := transcript.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("é", 3000)
	for _, ev := range []transcript.Event{
		transcript.RunStart{Task: "t"},
		transcript.Assistant{Text: "first look", ToolCalls: []transcript.ToolCallRecord{{Name: "read_file"}, {Name: "bash"}}},
		transcript.ToolResult{Tool: "bash", Result: long},
		transcript.ModelRequest{Turn: 2},
		transcript.Nudge{Kind: transcript.NudgeStall, Turn: 2},
		transcript.Assistant{Text: long},
		transcript.RunEnd{Status: "max_turns", Turns: 2},
	} {
		if err := tw.Write(ev); err != nil {
			t.Fatal(err)
		}
	}
	_ = tw.Close()
	got := transcriptTail(path, resumeTailChars)
	want := strings.Join([]string{
		"assistant: first look [tools: read_file,bash]",
		"tool_result bash: " + strings.Repeat("é", 500),
		"nudge: stall",
		"assistant: " + strings.Repeat("é", 1000),
		"run_end: max_turns",
	}, "\n") + "\n"
	if got != want {
		t.Fatalf("tail:\n%q\nwant\n%q", got, want)
	}
	// The newest lines that fit: a small budget keeps the end.
	if got := transcriptTail(path, 40); got != "nudge: stall\n" && got != "run_end: max_turns\n" {
		t.Fatalf("40-char tail %q", got)
	}
	if got := transcriptTail(path, 1050); !strings.HasSuffix(got, "run_end: max_turns\n") || strings.Contains(got, "tool_result") {
		t.Fatalf("1050-char tail %q", got)
	}
	if transcriptTail(filepath.Join(t.TempDir(), "none"), 100) != "" {
		t.Fatal("no transcript must give an empty tail")
	}
}

func TestResumeRefusalHintsKeepTheSandboxMode(t *testing.T) {
	r, prior, _ := priorDockerRun(t)
	r.docker.preflight = func(context.Context, workspace.Config) error { return docker.ErrDaemonUnreachable }
	_, err := r.Resume(t.Context(), resumeReq(filepath.Base(prior.RunDir)))
	var pe *PreflightError
	if !errors.As(err, &pe) {
		t.Fatalf("%v, want a refusal", err)
	}
	want := "start the Docker daemon (or point DOCKER_HOST at one that runs) (a docker run is resumed in the docker sandbox)"
	if pe.Hint != want {
		t.Fatalf("hint %q, want %q", pe.Hint, want)
	}
}

// TestResumeRefusesACollidingSlug: the last RE-3 refusal. The new slug's
// run dir exists already: exit 2, nothing created, the prior run as it
// was (no resumed_by).
func TestResumeRefusesACollidingSlug(t *testing.T) {
	r, prior, _ := priorDockerRun(t)
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.Local)
	r.Now = func() time.Time { return now }
	salt := strings.Repeat("\x01", 64)
	r.slugSalt = strings.NewReader(salt)
	want, err := transcript.NewSlug("docker task", now, strings.NewReader(salt))
	if err != nil {
		t.Fatal(err)
	}
	runs := filepath.Dir(prior.RunDir)
	if err := os.Mkdir(filepath.Join(runs, want), 0o700); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(prior.RunDir, "run.json"))
	_, err = r.Resume(t.Context(), resumeReq(filepath.Base(prior.RunDir)))
	var pe *PreflightError
	if !errors.As(err, &pe) || !strings.Contains(pe.Msg, "slug collision") {
		t.Fatalf("%v, want a slug collision refusal", err)
	}
	after, _ := os.ReadFile(filepath.Join(prior.RunDir, "run.json"))
	if string(after) != string(before) {
		t.Fatalf("the prior run.json changed:\n%s\n%s", before, after)
	}
	if got := names(t, prior.Worktree); !slices.Equal(got, []string{".git", "app.txt", "prior.txt"}) {
		t.Fatalf("the worktree after the refusal: %v", got)
	}
	if entries, _ := os.ReadDir(filepath.Join(runs, want)); len(entries) != 0 {
		t.Fatalf("the colliding dir was written into: %v", entries)
	}
	if alive, err := transcript.IsAlive(prior.RunDir); err != nil || alive {
		t.Fatalf("the prior run is still held alive after the refusal (%v)", err)
	}
}

// TestResumeSpecPrecedence: the settings a resume inherits (--allow-commit,
// --verify, --verify-rounds, --verify-timeout) are, in 0.9.1's order, the
// command line's, else what the resumed run recorded, else the built-in
// defaults (req.Spec's values when nothing was given).
func TestResumeSpecPrecedence(t *testing.T) {
	intp := func(n int) *int { return &n }
	recorded := &runs.Prior{
		Repo: "/r", Sandbox: "none", Provider: "openai", Model: "m",
		AllowCommit: true, VerifyCommand: "make test", VerifyRounds: intp(3), VerifyTimeout: intp(90),
	}
	unrecorded := &runs.Prior{Repo: "/r", Sandbox: "none", Provider: "openai", Model: "m"}
	defaults := Spec{VerifyRounds: 1, VerifyTimeout: 600}
	flags := Spec{AllowCommit: false, VerifyCommand: "go test ./...", VerifyRounds: 0, VerifyTimeout: 30}
	all := ResumeOverrides{AllowCommit: true, Verify: true, VerifyRounds: true, VerifyTimeout: true}
	type want struct {
		allow          bool
		verify         string
		rounds, timout int
	}
	for _, tc := range []struct {
		name  string
		prior *runs.Prior
		spec  Spec
		given ResumeOverrides
		want  want
	}{
		{"recorded, nothing given", recorded, defaults, ResumeOverrides{}, want{true, "make test", 3, 90}},
		{"not recorded, nothing given", unrecorded, defaults, ResumeOverrides{}, want{false, "", 1, 600}},
		{"every flag given over recorded values", recorded, flags, all, want{false, "go test ./...", 0, 30}},
		{"every flag given over nothing recorded", unrecorded, flags, all, want{false, "go test ./...", 0, 30}},
		{"an empty --verify turns the inherited verify off", recorded, Spec{VerifyRounds: 1, VerifyTimeout: 600}, ResumeOverrides{Verify: true}, want{true, "", 3, 90}},
		{"one flag given, the rest inherited", recorded, Spec{VerifyRounds: 5, VerifyTimeout: 600}, ResumeOverrides{VerifyRounds: true}, want{true, "make test", 5, 90}},
		{"--allow-commit given where the run had none", unrecorded, Spec{AllowCommit: true, VerifyRounds: 1, VerifyTimeout: 600}, ResumeOverrides{AllowCommit: true}, want{true, "", 1, 600}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := resumeSpec(ResumeRequest{Spec: tc.spec, Given: tc.given}, tc.prior)
			got := want{s.AllowCommit, s.VerifyCommand, s.VerifyRounds, s.VerifyTimeout}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// OnWorking is called once, after OnStarted, when the sandbox is open
// and the transcript begun; a run whose sandbox never opens never calls it.
func TestRunnerOnWorkingFollowsTheOpenSandbox(t *testing.T) {
	r, prior, _ := priorDockerRun(t)
	var calls []string
	var runDir string
	r.OnStarted = func(s Started) { calls = append(calls, "started"); runDir = s.RunDir }
	r.OnWorking = func() {
		calls = append(calls, "working")
		if _, err := os.Stat(filepath.Join(runDir, transcript.TranscriptName)); err != nil {
			t.Errorf("working before the transcript exists: %v", err)
		}
	}
	if _, err := r.Resume(t.Context(), resumeReq(filepath.Base(prior.RunDir))); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(calls, []string{"started", "working"}) {
		t.Fatalf("calls %v", calls)
	}

	r2, prior2, op := priorDockerRun(t)
	op.openErr = &sandbox.SandboxError{Op: "start the docker sandbox", Err: errors.New("no space left on device")}
	r2.OnWorking = func() { t.Error("working with no sandbox") }
	if _, err := r2.Resume(t.Context(), resumeReq(filepath.Base(prior2.RunDir))); err != nil {
		t.Fatal(err)
	}
}
