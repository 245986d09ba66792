package main

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/dirtywork/dirtywork/engine"
	"github.com/dirtywork/dirtywork/engine/provider/scripted"
	"github.com/dirtywork/dirtywork/transcript"
	"github.com/spf13/cobra"
)

// demoFiles are the demo's sample repository and the script its model
// replays.
//
//go:embed demo/script.json all:demo/repo
var demoFiles embed.FS

func newDemoCmd(io *streams) *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "Run a scripted end-to-end demonstration (no LLM needed)",
		Long: `Makes a small sample repository in a temporary directory, starts a local
model server that replays a prepared script (the model is scripted: no LLM is
involved), and runs dirtywork on it in host mode: the worker explores, fixes a
bug, adds a test and verifies it. Prints the run's JSON result on stdout and
where to look on stderr.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runDemo(c.Context(), io)
		},
	}
}

func runDemo(ctx context.Context, io *streams) error {
	data, err := demoFiles.ReadFile("demo/script.json")
	if err != nil {
		return err
	}
	script, err := scripted.ParseScript(data)
	if err != nil {
		return fmt.Errorf("the embedded demo script: %w", err)
	}
	dir, err := os.MkdirTemp("", "dirtywork-demo-")
	if err != nil {
		return usageErrorf("make the demo directory: %v", err)
	}
	repo := filepath.Join(dir, "shop")
	if err := makeDemoRepo(ctx, repo); err != nil {
		return usageErrorf("make the demo repository: %v", err)
	}
	// The demo's runs stay in its own directory, out of the operator's list.
	if err := os.Setenv(transcript.HomeEnv, filepath.Join(dir, "home")); err != nil {
		return err
	}

	srv := scripted.New(script)
	base, err := srv.Start("127.0.0.1:0")
	if err != nil {
		return usageErrorf("%v", err)
	}
	defer func() { _ = srv.Close() }()

	fmt.Fprintf(io.errOut, "dirtywork demo: the model is scripted — a local server at %s replays %d prepared turns; no LLM is involved.\n",
		base, len(script.Turns))
	fmt.Fprintf(io.errOut, "task: %s\n\n", script.Task)

	spec := engine.Spec{
		Repo: repo, Task: script.Task, Model: script.ModelID(), Provider: "openai", BaseURL: base,
		Sandbox: "none", MaxTurns: 40, Timeout: 10 * time.Minute, MaxTokens: 4096, Stream: true,
		StallTurns: 12, StuckRepeats: 4, VerifyRounds: 1, VerifyTimeout: 120,
		ContextWindow: script.ContextLength, MaxWorktreeMB: 2048, MaxWorktreeFiles: 200000,
	}
	if _, err := exec.LookPath("python3"); err == nil {
		spec.VerifyCommand = "python3 -m unittest -q"
	} else {
		fmt.Fprintln(io.errOut, "note: python3 is not installed, so the demo runs without its verify step")
	}
	payload, err := runAndPrint(ctx, io, spec, nil, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(io.errOut, "\nwhere to look:\n")
	fmt.Fprintf(io.errOut, "  the change:     git -C %s diff\n", payload.Worktree)
	if payload.Transcript != "" {
		fmt.Fprintf(io.errOut, "  the transcript: %s\n", payload.Transcript)
	}
	fmt.Fprintf(io.errOut, "  clean up:       rm -rf %s\n", dir)
	if payload.Status != engine.StatusCompleted {
		fmt.Fprintf(io.errOut, "the demo run ended %s instead of completed; its transcript says why\n", payload.Status)
		return silentExit(ExitRunNotCompleted)
	}
	return nil
}

// makeDemoRepo writes the embedded sample repository and commits it.
func makeDemoRepo(ctx context.Context, repo string) error {
	sub, err := fs.Sub(demoFiles, "demo/repo")
	if err != nil {
		return err
	}
	if err := os.CopyFS(repo, sub); err != nil {
		return err
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "-A"},
		{"-c", "user.name=dirtywork demo", "-c", "user.email=demo@dirtywork.invalid", "commit", "-q", "-m", "shop: invoice totals"},
	} {
		cmd := exec.CommandContext(ctx, "git", append([]string{"-C", repo}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %w: %s", args[0], err, out)
		}
	}
	return nil
}
