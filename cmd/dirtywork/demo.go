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
	"github.com/dirtywork/dirtywork/sandbox/docker"
	"github.com/dirtywork/dirtywork/transcript"
	"github.com/dirtywork/dirtywork/tui/backend"
	"github.com/spf13/cobra"
)

// demoFiles are the demo's sample repository and the scripts its model
// replays: script.json for the headless demo (the first of the cockpit's
// four tasks), cockpit-*.json for the other three.
//
//go:embed demo/script.json demo/cockpit-*.json all:demo/repo
var demoFiles embed.FS

// cockpitScripts are the cockpit's four tasks, in launch order.
var cockpitScripts = []string{"demo/script.json", "demo/cockpit-discount.json", "demo/cockpit-validate.json", "demo/cockpit-readme.json"}

type demoFlags struct {
	headless    bool
	pace        time.Duration
	sandbox     string
	image       string
	maxParallel int
}

func newDemoCmd(io *streams) *cobra.Command {
	var f demoFlags
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "A scripted demonstration of mission control (no LLM needed)",
		Long: `Makes a small sample repository in a temporary directory, starts local model
servers that replay prepared scripts (the model is scripted: no LLM is
involved), and opens mission control running four tasks on it, in the docker
sandbox when docker and the worker image are there, else in host mode. Its
runs are ordinary runs (in a temporary home unless DIRTYWORK_HOME is set):
review, accept and clean them as you would any other.

When stdout is not a terminal, or with --headless, it runs the first task
alone in host mode, prints the run's JSON result on stdout and where to look
on stderr.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if f.headless || !isTerminal(io.out) {
				return runDemo(c.Context(), io)
			}
			return runCockpit(c, io, f)
		},
	}
	fs := cmd.Flags()
	fs.BoolVar(&f.headless, "headless", false, "run one task and print its JSON result, without mission control")
	fs.StringVar(&f.sandbox, "sandbox", "auto", "auto (docker when ready, else host), docker or none")
	fs.IntVar(&f.maxParallel, "max-parallel", 4, "most runs alive at once in mission control")
	fs.DurationVar(&f.pace, "pace", 0, "wait this long before each scripted reply (to watch runs, or queue more)")
	fs.StringVar(&f.image, "image", defaultImage(), "worker image of the demo's docker runs")
	return cmd
}

// demoSetup makes the demo's directory, sample repository and home.
func demoSetup(ctx context.Context) (dir, repo string, err error) {
	dir, err = os.MkdirTemp("", "dirtywork-demo-")
	if err != nil {
		return "", "", usageErrorf("make the demo directory: %v", err)
	}
	repo = filepath.Join(dir, "shop")
	if err := makeDemoRepo(ctx, repo); err != nil {
		return "", "", usageErrorf("make the demo repository: %v", err)
	}
	// The demo's runs stay in its own directory, out of the operator's list,
	// unless the operator chose a home.
	if os.Getenv(transcript.HomeEnv) == "" {
		if err := os.Setenv(transcript.HomeEnv, filepath.Join(dir, "home")); err != nil {
			return "", "", err
		}
	}
	return dir, repo, nil
}

func loadDemoScript(name string) (scripted.Script, error) {
	data, err := demoFiles.ReadFile(name)
	if err != nil {
		return scripted.Script{}, err
	}
	script, err := scripted.ParseScript(data)
	if err != nil {
		return scripted.Script{}, fmt.Errorf("the embedded demo script %s: %w", name, err)
	}
	return script, nil
}

func runDemo(ctx context.Context, io *streams) error {
	script, err := loadDemoScript("demo/script.json")
	if err != nil {
		return err
	}
	dir, repo, err := demoSetup(ctx)
	if err != nil {
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
	if payload.Status != transcript.StatusCompleted {
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

// cockpitBanner says, on screen, that nothing here is a real model.
const cockpitBanner = "demo: the model is scripted — local servers replay prepared turns; no LLM is involved"

// runCockpit is the demo as mission control: four scripted tasks launched
// through the same path as any launch.
func runCockpit(c *cobra.Command, io *streams, f demoFlags) error {
	ctx := c.Context()
	if f.maxParallel < 1 {
		return usageErrorf("--max-parallel must be at least 1")
	}
	var scripts []scripted.Script
	for _, name := range cockpitScripts {
		s, err := loadDemoScript(name)
		if err != nil {
			return err
		}
		if f.pace > 0 {
			for i := range s.Turns {
				s.Turns[i].DelayMS = int(f.pace.Milliseconds())
			}
		}
		scripts = append(scripts, s)
	}
	dir, repo, err := demoSetup(ctx)
	if err != nil {
		return err
	}
	sandbox := f.sandbox
	switch sandbox {
	case "auto":
		sandbox = "none"
		if dockerReady(ctx, f.image) {
			sandbox = "docker"
		}
	case "docker", "none":
	default:
		return usageErrorf("--sandbox must be auto, docker or none, got %q", f.sandbox)
	}
	verify := ""
	if _, err := exec.LookPath("python3"); err == nil {
		verify = "python3 -m unittest -q"
	}
	// Every docker run of the demo, the cockpit's later launches too, uses
	// the demo's image.
	var extra []string
	if sandbox == "docker" {
		extra = []string{"--image", f.image}
	}
	var queue []backend.LaunchSpec
	var firstURL string
	for _, s := range scripts {
		srv := scripted.New(s)
		base, err := srv.Start("127.0.0.1:0")
		if err != nil {
			return usageErrorf("%v", err)
		}
		defer func() { _ = srv.Close() }()
		if firstURL == "" {
			firstURL = base
		}
		queue = append(queue, backend.LaunchSpec{
			Repo: repo, Task: s.Task, Model: s.ModelID(), BaseURL: base, Sandbox: sandbox,
			MaxTurns: 40, Verify: verify, ExtraArgs: extra,
		})
	}
	opts, err := tuiOptions(c, tuiFlags{repo: repo, model: scripts[0].ModelID(), baseURL: firstURL, sandbox: sandbox, maxParallel: f.maxParallel})
	if err != nil {
		return err
	}
	opts.MaxParallel = f.maxParallel
	opts.Queue = queue
	opts.Banner = cockpitBanner
	opts.Launch.Verify = verify
	opts.Launch.ExtraArgs = extra
	if err := runTUI(ctx, io, opts); err != nil {
		return err
	}
	fmt.Fprintf(io.errOut, "%s\n", cockpitBanner)
	fmt.Fprintf(io.errOut, "the demo's repository: %s\n", repo)
	fmt.Fprintf(io.errOut, "its runs:              %s\n", os.Getenv(transcript.HomeEnv))
	fmt.Fprintf(io.errOut, "runs still going when mission control quit lose their scripted model and end with an error\n")
	fmt.Fprintf(io.errOut, "clean up:              rm -rf %s\n", dir)
	return nil
}

// dockerReady reports whether the docker sandbox could run the demo: a
// daemon answers and the worker image is there.
func dockerReady(ctx context.Context, image string) bool {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	cl, err := docker.Connect()
	if err != nil {
		return false
	}
	defer func() { _ = cl.Close() }()
	if _, err := cl.ServerVersion(ctx); err != nil {
		return false
	}
	_, _, err = cl.ImageExists(ctx, image)
	return err == nil
}
