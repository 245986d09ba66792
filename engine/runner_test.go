package engine

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/engine/provider"
	"github.com/dirtywork/dirtywork/transcript"
)

// panicky is a provider whose chat panics: a programming error anywhere in
// the run must still end with a result.
type panicky struct{ fakeProvider }

func (*panicky) Chat(context.Context, provider.Request) (provider.Response, error) {
	panic("boom")
}

func tempRepo(t *testing.T) string {
	t.Helper()
	repo := filepath.Join(t.TempDir(), "repo")
	for _, args := range [][]string{{"init", "-q", "-b", "main", repo}, {"-C", repo, "commit", "-q", "--allow-empty", "-m", "init"}} {
		cmd := exec.Command("git", args...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return repo
}

func TestRunnerTurnsAPanicIntoModelError(t *testing.T) {
	t.Setenv(transcript.HomeEnv, filepath.Join(t.TempDir(), "home"))
	var stderr bytes.Buffer
	r := &Runner{
		Stderr: &stderr, Version: "test",
		NewProvider: func(Spec) (provider.Provider, error) { return &panicky{}, nil },
	}
	payload, err := r.Run(t.Context(), Spec{
		Repo: tempRepo(t), Task: "anything", Model: "m", Provider: "openai", Sandbox: "none",
		MaxTurns: 5, Timeout: time.Minute, MaxTokens: 100, ContextWindow: 32768,
		MaxWorktreeMB: 100, MaxWorktreeFiles: 1000,
	})
	if err != nil {
		t.Fatal(err)
	}
	if payload.Status != transcript.StatusModelError || !strings.HasPrefix(payload.FinalMessage, "unexpected error: boom") {
		t.Fatalf("payload %+v", payload)
	}
	lines, _, err := transcript.ReadFile(payload.Transcript)
	if err != nil || len(lines) == 0 || lines[len(lines)-1].Event != transcript.EventRunEnd {
		t.Fatalf("transcript must end with run_end: %v %v", lines, err)
	}
	rec, err := transcript.ReadRecord(payload.RunDir)
	if err != nil || rec["status"] != string(transcript.StatusModelError) {
		t.Fatalf("run.json %v %v", rec, err)
	}
}

// A model server failing the request ends the run with model_error, and
// run_end says it was the server (a bench keeps that out of the model's
// score).
func TestRunEndNamesAServerFailure(t *testing.T) {
	t.Setenv(transcript.HomeEnv, filepath.Join(t.TempDir(), "home"))
	r := &Runner{
		Stderr: &bytes.Buffer{}, Version: "test",
		NewProvider: func(Spec) (provider.Provider, error) {
			return &fakeProvider{replies: []any{&provider.Error{Msg: "HTTP 503 on x: busy", StatusCode: 503, Transient: true}}}, nil
		},
	}
	payload, err := r.Run(t.Context(), Spec{
		Repo: tempRepo(t), Task: "anything", Model: "m", Provider: "openai", Sandbox: "none",
		MaxTurns: 5, Timeout: time.Minute, MaxTokens: 100, ContextWindow: 32768,
		MaxWorktreeMB: 100, MaxWorktreeFiles: 1000,
	})
	if err != nil {
		t.Fatal(err)
	}
	lines, _, err := transcript.ReadFile(payload.Transcript)
	if err != nil || len(lines) == 0 {
		t.Fatalf("transcript: %v", err)
	}
	ev, err := lines[len(lines)-1].Decode()
	end, ok := ev.(transcript.RunEnd)
	if err != nil || !ok || end.Status != transcript.StatusModelError || end.ModelFailure != transcript.ModelFailureServer {
		t.Fatalf("last line %T %+v (%v)", ev, ev, err)
	}
}
