package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/host"
	"github.com/dirtywork/dirtywork/transcript"
)

// hostPreflight is preflight step 6 for --sandbox none: the jail's layers
// are tried out on this system (on macOS, Seatbelt: whether
// /usr/bin/sandbox-exec is there), and one that cannot be set up refuses
// the run (exit 2, each missing layer with its reason and fix) unless
// DIRTYWORK_ALLOW_UNCONFINED=1, which runs without the missing layers and
// says so in run_start.sandbox: never a silent downgrade. A system with
// neither the jail nor Seatbelt runs host mode only that way.
func (r *Runner) hostPreflight(ctx context.Context, p *prepared) error {
	var err error
	if p.hostMemory, err = sizeBytes("memory", p.spec.Docker.Memory); err != nil {
		return refuse("", "%v", err)
	}
	if p.hostTmp, err = sizeBytes("tmp-size", p.spec.Docker.TmpSize); err != nil {
		return refuse("", "%v", err)
	}
	if p.hostGitdir, err = sizeBytes("gitdir-size", p.spec.Docker.GitdirSize); err != nil {
		return refuse("", "%v", err)
	}
	// Idmapped mounts are tried on the file systems the jail will bind:
	// the repository's (the worktree) and the temporary directory's (the
	// worker's repository).
	report := host.ProbeJail(ctx, probeCacheFile(), p.repo.Root, os.TempDir())
	p.jailProbe = &report
	if err := report.Err(); err != nil && r.getenv(AllowUnconfinedEnv) != "1" {
		return &PreflightError{Msg: err.Error(), Hint: hostJailHint, Err: err}
	}
	return nil
}

// sizeBytes parses a size flag's value with sandbox.ParseSize (docker's
// forms: 512m, 1.5g, 4gb); "" (a Spec built without the flag) is 0, the
// jail's default.
func sizeBytes(flag, v string) (int64, error) {
	if strings.TrimSpace(v) == "" {
		return 0, nil
	}
	n, err := sandbox.ParseSize(v)
	if err != nil {
		return 0, fmt.Errorf("--%s: %w", flag, err)
	}
	return n, nil
}

// probeCacheFile is where the jail's probe is kept: beside the runs.
func probeCacheFile() string {
	home, err := transcript.Home()
	if err != nil {
		return ""
	}
	return filepath.Join(home, "cache", "jail-probe.json")
}
