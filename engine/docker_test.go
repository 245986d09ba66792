package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/gitops"

	"github.com/dirtywork/dirtywork/engine/provider"
	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/docker"
	"github.com/dirtywork/dirtywork/sandbox/docker/workspace"
	"github.com/dirtywork/dirtywork/transcript"
)

// fakeDocker is a docker workspace without a daemon: the loop's tools
// answer from fakeWS, and the test decides what Finalize reports.
type fakeDocker struct {
	fakeWS
	cfg      workspace.Config
	fin      sandbox.Finalization
	finErr   error
	finalize int
	closed   int
}

func (w *fakeDocker) DisplayRoot() string { return "/work" }

func (w *fakeDocker) Settings() map[string]any {
	return map[string]any{"backend": "docker", "image": w.cfg.Image, "network": "none"}
}

func (w *fakeDocker) Names() (container, volume string) {
	return "dw-" + w.cfg.Slug, "dw-" + w.cfg.Slug + "-work"
}

func (w *fakeDocker) ImageDigest() *string {
	d := "dirtywork-worker@sha256:" + strings.Repeat("ab", 32)
	return &d
}

func (w *fakeDocker) Finalize(context.Context) (sandbox.Finalization, error) {
	w.finalize++
	return w.fin, w.finErr
}

func (w *fakeDocker) Close() error { w.closed++; return nil }

// dockerRepo is a repository with one tracked file, so that a lane made
// without a checkout differs from its branch.
func dockerRepo(t *testing.T) string {
	t.Helper()
	repo := filepath.Join(t.TempDir(), "repo")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "app.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "init"}} {
		out, err := isolatedGit(repo, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return repo
}

// isolatedGit is git in dir, blind to the machine's configuration.
func isolatedGit(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t",
		"GIT_AUTHOR_DATE=2026-01-02T03:04:05Z", "GIT_COMMITTER_DATE=2026-01-02T03:04:05Z")
	return cmd
}

func dockerSpec(repo string) Spec {
	return Spec{
		Repo: repo, Task: "docker task", Model: "m", Provider: "openai", Sandbox: "docker",
		MaxTurns: 5, Timeout: time.Minute, MaxTokens: 100, ContextWindow: 32768,
		MaxWorktreeMB: 100, MaxWorktreeFiles: 1000, PidsLimit: 77,
		Docker: DockerSpec{
			Image: "dirtywork-worker:test", Memory: "4g", CPUs: 2, TmpSize: "1g", GitdirSize: "512m",
			MinFreeMB: 10, MaxPatchMB: 3, KeepVolume: true, WithHistory: true, Setup: "make deps",
		},
	}
}

// dockerRunner is a Runner whose docker sandbox is open; prov answers the
// model's side.
func dockerRunner(t *testing.T, prov provider.Provider, open func(context.Context, workspace.Config) (dockerWorkspace, error)) (*Runner, *bytes.Buffer) {
	t.Helper()
	t.Setenv(transcript.HomeEnv, filepath.Join(t.TempDir(), "home"))
	var stderr bytes.Buffer
	return &Runner{
		Stderr: &stderr, Version: "test",
		NewProvider: func(Spec) (provider.Provider, error) { return prov, nil },
		docker: dockerBackend{
			preflight: func(context.Context, workspace.Config) error { return nil },
			open:      open,
		},
	}, &stderr
}

func readJSONFile(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

func transcriptEvents(t *testing.T, path string) []map[string]any {
	t.Helper()
	lines, problems, err := transcript.ReadFile(path)
	if err != nil || len(problems) > 0 {
		t.Fatalf("read transcript: %v %v", err, problems)
	}
	var evs []map[string]any
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal(l.Raw, &m); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, m)
	}
	return evs
}

// A docker run is wired end to end: the workspace gets the run's names
// and the spec's settings, the lane holds only .git, run.json names the
// container, run_start records the workspace's settings, resets and the
// setup result reach the transcript, the model is told its files are at
// /work, and the deny-list applies the docker subset.
func TestDockerRunIsWiredToTheWorkspace(t *testing.T) {
	repo := dockerRepo(t)
	prov := &fakeProvider{replies: []any{
		// "cd /" is refused on the host only (rule 8); inside the
		// container it must run. "sudo" is refused everywhere.
		calls(call("c1", "bash", `{"command":"cd / && ls"}`)),
		calls(call("c2", "bash", `{"command":"sudo true"}`)),
		calls(call("c3", "finish", `{"summary":"done in docker"}`)),
	}}
	patch := "/runs/x/diff.patch"
	var ws *fakeDocker
	var laneEntries []string
	var ran []string
	r, stderr := dockerRunner(t, prov, func(_ context.Context, cfg workspace.Config) (dockerWorkspace, error) {
		entries, err := os.ReadDir(cfg.Worktree)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			laneEntries = append(laneEntries, e.Name())
		}
		ws = &fakeDocker{cfg: cfg, fin: sandbox.Finalization{
			ExportStatus: "ok", PatchPath: &patch, FilesChanged: []string{"app.txt"}, DiffStat: " app.txt | 2 +-",
		}}
		code := 0
		cfg.OnSetup("make deps", &code, "deps ready\n", 1.23)
		// A reset before run_start is held until run_start is written.
		cfg.OnReset("early")
		ws.bash = func(cmd string) sandbox.BashResult {
			ran = append(ran, cmd)
			cfg.OnReset("stray process after bash")
			return sandbox.BashResult{ExitCode: 0, Output: "bin"}
		}
		return ws, nil
	})
	payload, err := r.Run(t.Context(), dockerSpec(repo))
	if err != nil {
		t.Fatal(err)
	}
	if payload.Status != transcript.StatusCompleted || payload.FinalMessage != "done in docker" || payload.ExportStatus != nil {
		t.Fatalf("payload %+v\n%s", payload, stderr)
	}
	if strings.Join(laneEntries, ",") != ".git" {
		t.Fatalf("the lane held %v when the container opened; want only .git", laneEntries)
	}

	cfg := ws.cfg
	slug := filepath.Base(payload.RunDir)
	if cfg.Slug != slug || cfg.Worktree != payload.Worktree || cfg.Branch != payload.Branch ||
		cfg.BaseCommit != payload.BaseCommit || cfg.RunDir != payload.RunDir {
		t.Fatalf("run identity in the config: %+v", cfg)
	}
	resolvedRepo, _ := filepath.EvalSymlinks(repo)
	if cfg.RepoRoot != resolvedRepo || !strings.HasSuffix(cfg.CommonDir, ".git") {
		t.Fatalf("repository in the config: %q %q", cfg.RepoRoot, cfg.CommonDir)
	}
	if cfg.Image != "dirtywork-worker:test" || cfg.Memory != "4g" || cfg.CPUs != 2 || cfg.TmpSize != "1g" ||
		cfg.GitdirSize != "512m" || cfg.MinFreeMB != 10 || cfg.MaxPatchMB != 3 || !cfg.KeepVolume ||
		!cfg.WithHistory || cfg.Setup != "make deps" || cfg.AllowNetwork || cfg.PidsLimit != 77 {
		t.Fatalf("settings in the config: %+v", cfg)
	}
	if cfg.Limits != (sandbox.Limits{MaxBytes: 100 << 20, MaxEntries: 1000}) {
		t.Fatalf("limits %+v", cfg.Limits)
	}
	if cfg.Toolbox == nil {
		t.Fatal("no tool server source in the config")
	}
	if exe, _ := os.Executable(); runtime.GOOS == "linux" {
		if tb, err := cfg.Toolbox(runtime.GOARCH); err != nil || tb.Path != exe || tb.Data != nil {
			t.Fatalf("tool server for linux/%s: %+v, %v; want this binary %q", runtime.GOARCH, tb.Path, err, exe)
		}
	}
	if ws.finalize != 1 || ws.closed == 0 {
		t.Fatalf("finalize ran %d times, close %d", ws.finalize, ws.closed)
	}

	if strings.Join(ran, "|") != "cd / && ls" {
		t.Fatalf("bash ran %q; want the host-only rule skipped and sudo blocked", ran)
	}
	system := prov.reqs[0].Messages[0].Content
	if !strings.Contains(system, "The repository's files are at /work,") {
		t.Fatalf("system prompt:\n%s", system)
	}

	rec := readJSONFile(t, filepath.Join(payload.RunDir, "run.json"))
	want := map[string]any{
		"sandbox": "docker", "container": "dw-" + slug, "volume": "dw-" + slug + "-work",
		"image": "dirtywork-worker:test", "image_digest": *ws.ImageDigest(), "image_pinned": true,
		"export_status": "ok", "patch_path": patch, "status": "completed",
	}
	for k, v := range want {
		if rec[k] != v {
			t.Errorf("run.json %s = %v, want %v", k, rec[k], v)
		}
	}

	evs := transcriptEvents(t, payload.Transcript)
	var names []string
	for _, ev := range evs {
		if n := ev["event"].(string); n != "model_request" && n != "model_progress" {
			names = append(names, n)
		}
	}
	wantNames := "run_start,setup,sandbox_reset,assistant,sandbox_reset,tool_result,assistant,guardrail_block,tool_result,assistant,tool_result,run_end"
	if got := strings.Join(names, ","); got != wantNames {
		t.Fatalf("events\n%s\nwant\n%s", got, wantNames)
	}
	if evs[1]["command"] != "make deps" || evs[1]["output"] != "deps ready\n" || evs[2]["reason"] != "early" {
		t.Fatalf("held setup and reset %v %v", evs[1], evs[2])
	}
	settings, _ := evs[0]["sandbox"].(map[string]any)
	if settings["backend"] != "docker" || settings["image"] != "dirtywork-worker:test" {
		t.Fatalf("run_start.sandbox %v", evs[0]["sandbox"])
	}
	end := evs[len(evs)-1]
	setup, _ := end["setup"].(map[string]any)
	if setup["command"] != "make deps" || setup["exit_code"] != float64(0) || setup["output"] != "deps ready\n" ||
		setup["duration_s"] != 1.2 || end["export_status"] != "ok" || end["patch_path"] != patch {
		t.Fatalf("run_end %v", end)
	}
}

// A sandbox that cannot start is a setup failure (E-18): sandbox_error,
// the record kept, the worktree and the branch removed.
func TestDockerSetupFailureRemovesTheLane(t *testing.T) {
	repo := dockerRepo(t)
	var cfg workspace.Config
	r, _ := dockerRunner(t, &fakeProvider{}, func(_ context.Context, c workspace.Config) (dockerWorkspace, error) {
		cfg = c
		return nil, &sandbox.SandboxError{Op: "create container dw-" + c.Slug, Err: errors.New("no space left")}
	})
	payload, err := r.Run(t.Context(), dockerSpec(repo))
	if err != nil {
		t.Fatal(err)
	}
	if payload.Status != transcript.StatusSandboxError || !strings.Contains(payload.FinalMessage, "no space left") ||
		payload.Turns != nil || payload.ExportStatus != nil || payload.Transcript != "" {
		t.Fatalf("payload %+v", payload)
	}
	if _, err := os.Lstat(cfg.Worktree); !os.IsNotExist(err) {
		t.Fatalf("the worktree %s is still there: %v", cfg.Worktree, err)
	}
	if out, err := isolatedGit(repo, "branch", "--list", cfg.Branch).Output(); err != nil || len(out) != 0 {
		t.Fatalf("branch %s still listed: %q %v", cfg.Branch, out, err)
	}
	rec := readJSONFile(t, filepath.Join(payload.RunDir, "run.json"))
	if rec["status"] != string(transcript.StatusSandboxError) || rec["container"] != nil || rec["sandbox"] != "docker" {
		t.Fatalf("run.json %v", rec)
	}
	if _, ok := rec["export_status"]; ok {
		t.Fatalf("run.json has export_status although no finalize ran: %v", rec)
	}
}

// A run that fails after the container started exports first (E-18): the
// payload gains export_status; when the export itself fails the message
// names the volume that was kept.
func TestDockerFailureAfterStartExportsFirst(t *testing.T) {
	tests := []struct {
		name       string
		finErr     error
		wantExport bool
		wantMsg    string
	}{
		{"export ok", nil, true, "create transcript"},
		{"export fails", errors.New("volume busy"), false, "(docker volume kept for recovery: dw-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ws *fakeDocker
			r, _ := dockerRunner(t, &fakeProvider{}, func(_ context.Context, cfg workspace.Config) (dockerWorkspace, error) {
				// Something already at the transcript's path makes its
				// creation fail once the container runs.
				if err := os.WriteFile(filepath.Join(cfg.RunDir, transcript.TranscriptName), nil, 0o600); err != nil {
					return nil, err
				}
				ws = &fakeDocker{cfg: cfg, fin: sandbox.Finalization{ExportStatus: "ok"}, finErr: tt.finErr}
				return ws, nil
			})
			payload, err := r.Run(t.Context(), dockerSpec(dockerRepo(t)))
			if err != nil {
				t.Fatal(err)
			}
			if payload.Status != transcript.StatusModelError || !strings.Contains(payload.FinalMessage, tt.wantMsg) || ws.finalize != 1 {
				t.Fatalf("payload %+v, finalize ran %d times", payload, ws.finalize)
			}
			rec := readJSONFile(t, filepath.Join(payload.RunDir, "run.json"))
			if tt.wantExport != (payload.ExportStatus != nil) || tt.wantExport != (rec["export_status"] == "ok") {
				t.Fatalf("export_status: payload %v, run.json %v", payload.ExportStatus, rec["export_status"])
			}
			data, err := EncodePayload(payload)
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantExport != strings.Contains(string(data), `"export_status":"ok"`) {
				t.Fatalf("stdout object %s", data)
			}
			if _, err := os.Stat(payload.Worktree); err != nil {
				t.Fatalf("a run failure must keep the worktree: %v", err)
			}
		})
	}
}

// A refused docker preflight creates nothing and says how to do without
// docker; the cause stays reachable for the command line's own hints.
func TestDockerPreflightRefusal(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		wantHint string
	}{
		{"daemon", fmt.Errorf("query docker daemon at unix:///x: %w", docker.ErrDaemonUnreachable), "start the Docker daemon"},
		{"slow daemon", fmt.Errorf("query docker daemon: %w", docker.ErrTimedOut), "start the Docker daemon"},
		{"image", fmt.Errorf("image dirtywork-worker:test: %w", workspace.ErrImageMissing), "dirtywork image build"},
		{"disk", fmt.Errorf("docker root: %w", workspace.ErrLowDiskSpace), "--min-free-mb"},
		{"no tool server", fmt.Errorf("tool server for image w (linux/riscv64): %w", workspace.ErrNoToolbox), "task build:"},
		{"name taken", fmt.Errorf("%w: container dw-x already exists", docker.ErrConflict), "fix the docker setup"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := filepath.Join(t.TempDir(), "home")
			t.Setenv(transcript.HomeEnv, home)
			repo := dockerRepo(t)
			var got workspace.Config
			r := &Runner{
				Stderr: &bytes.Buffer{}, Version: "test",
				NewProvider: func(Spec) (provider.Provider, error) { return &fakeProvider{}, nil },
				docker: dockerBackend{
					preflight: func(_ context.Context, cfg workspace.Config) error { got = cfg; return tt.err },
					open: func(context.Context, workspace.Config) (dockerWorkspace, error) {
						t.Error("a refused run opened a workspace")
						return nil, errors.New("unreachable")
					},
				},
			}
			_, err := r.Run(t.Context(), dockerSpec(repo))
			var pe *PreflightError
			if !errors.As(err, &pe) || !errors.Is(err, tt.err) || pe.Msg != tt.err.Error() {
				t.Fatalf("err %v; want a refusal wrapping %v", err, tt.err)
			}
			if !strings.Contains(pe.Hint, tt.wantHint) || !strings.Contains(pe.Hint, "--sandbox none") {
				t.Fatalf("hint %q", pe.Hint)
			}
			if got.Image != "dirtywork-worker:test" || got.Slug != "" || got.RepoRoot == "" {
				t.Fatalf("preflight config %+v", got)
			}
			if entries, _ := os.ReadDir(filepath.Join(home, "runs")); len(entries) != 0 {
				t.Fatalf("a refused run left run dirs: %v", entries)
			}
			if _, err := os.Stat(filepath.Join(repo, ".worktrees")); !os.IsNotExist(err) {
				t.Fatalf("a refused run touched .worktrees: %v", err)
			}
		})
	}
}

// --allow-commit is refused before docker is asked anything.
func TestDockerAllowCommitRefusedFirst(t *testing.T) {
	asked := false
	r := &Runner{
		Stderr: &bytes.Buffer{}, Version: "test",
		NewProvider: func(Spec) (provider.Provider, error) { return &fakeProvider{}, nil },
		docker: dockerBackend{
			preflight: func(context.Context, workspace.Config) error { asked = true; return nil },
			open:      func(context.Context, workspace.Config) (dockerWorkspace, error) { return nil, errors.New("no") },
		},
	}
	spec := dockerSpec(dockerRepo(t))
	spec.AllowCommit = true
	_, err := r.Run(t.Context(), spec)
	var pe *PreflightError
	if !errors.As(err, &pe) || !strings.Contains(pe.Msg, "--allow-commit requires --sandbox none") || asked {
		t.Fatalf("err %v, docker asked %v", err, asked)
	}
}

// A run names its docker engine (a bench spreads cases over several); the
// workspace is opened on it.
func TestDockerConfigCarriesTheEngine(t *testing.T) {
	t.Parallel()
	cfg := dockerConfig(Spec{Docker: DockerSpec{Host: "unix:///run/dw-second.sock", Image: "img"}}, gitops.Repo{Root: "/r", CommonDir: "/r/.git"})
	if cfg.DockerHost != "unix:///run/dw-second.sock" {
		t.Fatalf("config %+v", cfg)
	}
	if _, err := engineAt("ssh://elsewhere")(); err == nil {
		t.Fatal("an ssh:// engine was taken")
	}
}
