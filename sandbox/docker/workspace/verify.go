package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/docker/daemon"
	"github.com/dirtywork/dirtywork/sandbox/export"
	"github.com/dirtywork/dirtywork/sandbox/seal"
	"github.com/dirtywork/dirtywork/sandbox/toolbox"
)

// verifyDir is the verify session's directory in the container: on /tmp,
// which the session empties first.
const verifyDir = "/tmp/.dirtywork-verify"

// Verify runs the verify command on the sealed tree in a fresh session of
// the container (see sandbox.VerifyRun): the tool server kills whatever
// the commands left and seals /work (sealVolume), then, with nothing of
// the worker alive, empties /tmp, the worker's home and /dev/shm, drops
// the System V IPC objects, makes a git dir afresh from the base commit
// (the worker's own in /gitdir, its config and hooks, are not used) and
// runs the command with a home and TMPDIR of its own; afterwards it kills
// what the command left, takes out what it made and reports what it
// changed. The watchdog counts it as a command.
func (w *Workspace) Verify(ctx context.Context, command string, timeout time.Duration) (sandbox.VerifyRun, error) {
	run := sandbox.VerifyRun{BashResult: sandbox.BashResult{ExitCode: -1, Timeout: timeout}}
	if err := w.waitMeasured(ctx); err != nil {
		return run, err
	}
	s, err := w.current()
	if err != nil {
		return run, err
	}
	if note, err := w.settleBudget(ctx, s); err != nil {
		return run, err
	} else if note != "" {
		run.LaunchError = note
		return run, nil
	}
	report, _, notice, err := w.sealVolume(ctx, s)
	if err != nil || notice != "" {
		run.LaunchError = notice
		return run, err
	}
	run.Sealed = report.Notes()
	setup, err := gitInitScriptAt(verifyDir+"/git", w.cfg.Branch, w.cfg.BaseCommit, !w.cfg.WithHistory, false)
	if err != nil {
		return run, &sandbox.SandboxError{Op: "verify", Err: err}
	}
	w.wd.bashBegin()
	reply, err := s.tb.Verify(ctx, toolbox.VerifyRequest{
		Command: command, Timeout: timeout, Setup: setup, Dir: verifyDir,
		Wipe: []string{"/tmp", homeDir, "/dev/shm"},
		Env:  []string{"GIT_DIR=" + verifyDir + "/git", "GIT_WORK_TREE=" + workDir},
	})
	w.wd.bashEnd()
	if err != nil {
		notice, ferr := w.toolFailed(ctx, "verify", s, err)
		run.LaunchError = trimError(notice)
		return run, ferr
	}
	note, err := w.afterBash(ctx, s, 0, false)
	if err != nil {
		return run, err
	}
	run.BashResult = reply.BashResult
	if note != "" {
		run.Output += "\n[" + note + "]"
	}
	run.Tree, run.Changed = reply.Hash, reply.Changed
	return run, nil
}

// sealVolume seals /work through session s's tool server (sealWith) for
// verify. notice is set, with a nil error, when the sandbox had to be
// reset instead (the tool server broke).
func (w *Workspace) sealVolume(ctx context.Context, s *session) (seal.Report, string, string, error) {
	reply, err := w.sealWith(ctx, s)
	if err != nil {
		var se *sandbox.SandboxError
		if errors.As(err, &se) {
			return seal.Report{}, "", "", err
		}
		notice, ferr := w.toolFailed(ctx, "seal", s, err)
		return seal.Report{}, "", trimError(notice), ferr
	}
	return reply.Report, reply.Hash, "", nil
}

// sealWith seals /work through session s's tool server, which first kills
// whatever the commands left (one that survives fails it): the
// repositories the worker made are copied into the run dir's quarantine
// (as archives: nothing in them can run) and taken out, then everything
// else the export would drop, and the ignored files the worker made. What
// every seal found is kept for Finalize's evidence.
func (w *Workspace) sealWith(ctx context.Context, s *session) (toolbox.SealReply, error) {
	b, err := w.sealBaseline(ctx)
	if err != nil {
		return toolbox.SealReply{}, &sandbox.SandboxError{Op: "seal the tree", Err: err}
	}
	reply, err := s.tb.Seal(ctx, toolbox.SealRequest{Baseline: b})
	if err == nil && reply.Pending {
		repos := reply.Report.Repositories
		if qerr := w.quarantineArchives(ctx, s.id, repos); qerr != nil {
			return toolbox.SealReply{}, &sandbox.SandboxError{Op: "quarantine the worker's repositories", Err: qerr}
		}
		reply, err = s.tb.Seal(ctx, toolbox.SealRequest{Baseline: b, Drop: true})
		reply.Report.Repositories = repos
	}
	if err != nil {
		return toolbox.SealReply{}, err
	}
	w.mu.Lock()
	w.sealed.Merge(reply.Report)
	w.walkPending = true // the seal walks the tree for the budget again
	w.mu.Unlock()
	return reply, nil
}

// sealBaseline is what /work is sealed against: the baseline time the
// tool server took once the checkout (and the setup) were done, the base
// tree's paths and the repository's own excludes.
func (w *Workspace) sealBaseline(ctx context.Context) (seal.Baseline, error) {
	base, err := w.baseFiles(ctx)
	if err != nil {
		return seal.Baseline{}, err
	}
	tracked := make(map[string]uint32, len(base))
	for _, f := range base {
		tracked[f.Path] = uint32(f.Mode)
	}
	exclude, err := os.ReadFile(filepath.Join(w.cfg.CommonDir, "info", "exclude"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return seal.Baseline{}, fmt.Errorf("read the repository's excludes: %w", err)
	}
	w.mu.Lock()
	since := w.since
	w.mu.Unlock()
	return seal.Baseline{Since: since, Tracked: tracked, Exclude: exclude, DropLongPaths: true}, nil
}

// baseFiles is the base tree: the baseline's, else read now.
func (w *Workspace) baseFiles(ctx context.Context) ([]export.BaseFile, error) {
	if w.baseline != nil {
		if base, err := w.baseline.wait(ctx); err == nil && base != nil {
			return base, nil
		}
	}
	return baseTree(ctx, w.git, w.cfg.RepoRoot, w.cfg.BaseCommit)
}

// quarantineArchives copies each of dirs (paths under /work) out of the
// container into <RunDir>/quarantine as the archive the daemon hands out,
// unopened: nothing in it can run, and nothing of it is followed. An
// index.json there maps the archives to the paths. The copies are
// bounded by the tree's byte cap.
func (w *Workspace) quarantineArchives(ctx context.Context, id string, dirs []string) error {
	dest := filepath.Join(w.cfg.RunDir, QuarantineDir)
	if err := os.MkdirAll(dest, 0o700); err != nil {
		return err
	}
	type indexEntry struct {
		Path    string `json:"path"`
		Archive string `json:"archive"`
	}
	index := []indexEntry{}
	if data, err := os.ReadFile(filepath.Join(dest, "index.json")); err == nil {
		_ = json.Unmarshal(data, &index) // ours, from an earlier seal of the run
	}
	limit := w.cfg.Limits.MaxBytes
	if limit <= 0 {
		limit = defaultMaxExportBytes
	}
	for _, d := range dirs {
		name := "repository-" + strconv.Itoa(len(index)+1) + ".tar"
		f, err := os.OpenFile(filepath.Join(dest, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		err = w.eng.Download(ctx, id, workDir+"/"+d, func(r io.Reader) error {
			_, err := io.Copy(f, io.LimitReader(r, limit))
			return err
		})
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil && !errors.Is(err, daemon.ErrNotFound) {
			return fmt.Errorf("copy %q out: %w", d, err)
		}
		index = append(index, indexEntry{Path: d, Archive: name})
	}
	data, err := json.MarshalIndent(index, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dest, "index.json"), data, 0o600)
}

// markBaseline takes the seal's baseline time through session s, once the
// tree is checked out (and set up) and before the worker's first call.
func (w *Workspace) markBaseline(ctx context.Context, s *session) error {
	since, err := s.tb.Mark(ctx)
	if err != nil {
		return fmt.Errorf("mark the tree's baseline: %w", err)
	}
	w.mu.Lock()
	w.since = since
	w.mu.Unlock()
	if w.cfg.OnBaseline != nil {
		w.cfg.OnBaseline(since)
	}
	return nil
}

// trimError is a tool's "ERROR: " notice without its prefix.
func trimError(notice string) string {
	const p = "ERROR: "
	if len(notice) >= len(p) && notice[:len(p)] == p {
		return notice[len(p):]
	}
	return notice
}
