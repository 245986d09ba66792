package host

import (
	"context"
	"errors"

	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/fsops"
)

// The file tools delegate to fsops, which confines every path to the
// worktree through the os.Root (E-36). Mutating tools are followed by a
// budget check (E-39), reads are not.

// ReadFile is the read_file tool.
func (w *Workspace) ReadFile(ctx context.Context, path string, offset, limit int) (string, error) {
	if err := w.readable(ctx); err != nil {
		return "", err
	}
	return toolErr("read_file")(w.fs.ReadFile(path, offset, limit))
}

// WriteFile is the write_file tool.
func (w *Workspace) WriteFile(ctx context.Context, path, content string) (string, error) {
	return w.mutate(ctx, "write_file", path, func() (string, error) {
		return w.fs.WriteFile(path, content)
	})
}

// EditFile is the edit_file tool.
func (w *Workspace) EditFile(ctx context.Context, path, oldString, newString string) (string, error) {
	return w.mutate(ctx, "edit_file", path, func() (string, error) {
		return w.fs.EditFile(path, oldString, newString)
	})
}

// InsertText is the insert_before (after=false) and insert_after tools.
func (w *Workspace) InsertText(ctx context.Context, path, anchor, text string, after bool) (string, error) {
	tool := "insert_before"
	if after {
		tool = "insert_after"
	}
	return w.mutate(ctx, tool, path, func() (string, error) {
		return w.fs.InsertText(path, anchor, text, after)
	})
}

// ApplyEdits is the apply_edits tool.
func (w *Workspace) ApplyEdits(ctx context.Context, path string, edits []sandbox.Edit) (string, error) {
	fe := make([]fsops.Edit, len(edits))
	for i, e := range edits {
		fe[i] = fsops.Edit{Old: e.Old, New: e.New}
	}
	return w.mutate(ctx, "apply_edits", path, func() (string, error) {
		return w.fs.ApplyEdits(path, fe)
	})
}

// ListDir is the list_dir tool.
func (w *Workspace) ListDir(ctx context.Context, path string) (string, error) {
	if err := w.readable(ctx); err != nil {
		return "", err
	}
	return toolErr("list_dir")(w.fs.ListDir(path))
}

// Grep is the grep tool.
func (w *Workspace) Grep(ctx context.Context, args sandbox.GrepArgs) (string, error) {
	if err := w.readable(ctx); err != nil {
		return "", err
	}
	return toolErr("grep")(w.fs.Grep(ctx, args.Pattern, args.Path, args.Glob, args.Timeout))
}

// mutate runs a file tool that may change the entry at path and accounts
// the change against the budget. A breach returns only the
// *sandbox.BudgetError: the call gets no result (E-39).
func (w *Workspace) mutate(ctx context.Context, tool, path string, run func() (string, error)) (string, error) {
	if err := w.usable(ctx); err != nil {
		return "", err
	}
	c := w.budget.Before(path)
	out, err := toolErr(tool)(run())
	if err != nil {
		return "", err
	}
	if err := w.budget.After(c); err != nil {
		return "", err
	}
	return out, nil
}

// toolErr passes a tool's result through, and turns an error from fsops,
// which only returns errors that must end the run, into a
// *sandbox.SandboxError; the context's own errors pass unchanged.
func toolErr(tool string) func(string, error) (string, error) {
	return func(out string, err error) (string, error) {
		if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return out, err
		}
		return "", &sandbox.SandboxError{Op: tool, Err: err}
	}
}
