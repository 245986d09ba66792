package toolbox

import (
	"context"
	"fmt"
	"time"

	"github.com/dirtywork/dirtywork/sandbox"
)

// defaultGrepTimeout is grep's timeout when the caller gives none, as in
// fsops.
const defaultGrepTimeout = 30 * time.Second

// The tool calls mirror sandbox.Workspace: a tool's failure is its result
// text ("ERROR: …") with a nil error; an error is the server gone
// (ErrServerGone), an error reply (*RemoteError), a request too large
// (ErrRequestTooLarge), or the context's.

// Hello checks the server speaks this protocol version and returns what
// it says about itself. It must be the first call: it hands the server
// the secret every later frame is tagged with, and a server refuses
// anything before it (ending the stream).
//
// limits are the tree's caps, which the server's budget holds the tree
// to: every writing file tool is accounted as it runs, and the tree is
// walked again in the background after each command; Budget asks for the
// verdict.
func (c *Client) Hello(ctx context.Context, limits sandbox.Limits) (ServerInfo, error) {
	if limits.MaxBytes < 0 || limits.MaxEntries < 0 {
		return ServerInfo{}, fmt.Errorf("hello: %w: negative limits", ErrBadRequest)
	}
	args := helloArgs{Version: ProtocolVersion, Key: c.key, MaxBytes: limits.MaxBytes, MaxEntries: limits.MaxEntries}
	d, err := c.call(ctx, kindHello, args, c.opts.callTimeout)
	if err != nil {
		return ServerInfo{}, err
	}
	if d.hello.Version != ProtocolVersion {
		// It accepted our version, so it cannot speak another.
		return ServerInfo{}, c.failCall(gone("hello: server says version %d after accepting %d", d.hello.Version, ProtocolVersion))
	}
	return d.hello, nil
}

// ReadFile is the read_file tool.
func (c *Client) ReadFile(ctx context.Context, path string, offset, limit int) (string, error) {
	if err := checkName(kindReadFile, "path", path); err != nil {
		return "", err
	}
	return c.text(ctx, kindReadFile, readFileArgs{Path: []byte(path), Offset: offset, Limit: limit}, c.opts.callTimeout)
}

// WriteFile is the write_file tool.
func (c *Client) WriteFile(ctx context.Context, path, content string) (string, error) {
	if err := checkName(kindWriteFile, "path", path); err != nil {
		return "", err
	}
	return c.text(ctx, kindWriteFile, writeFileArgs{Path: []byte(path), Content: []byte(content)}, c.opts.callTimeout)
}

// EditFile is the edit_file tool.
func (c *Client) EditFile(ctx context.Context, path, oldString, newString string) (string, error) {
	if err := checkName(kindEditFile, "path", path); err != nil {
		return "", err
	}
	return c.text(ctx, kindEditFile, editFileArgs{Path: []byte(path), Old: []byte(oldString), New: []byte(newString)}, c.opts.callTimeout)
}

// InsertText is the insert_before (after=false) and insert_after tools.
func (c *Client) InsertText(ctx context.Context, path, anchor, text string, after bool) (string, error) {
	if err := checkName(kindInsertText, "path", path); err != nil {
		return "", err
	}
	args := insertTextArgs{Path: []byte(path), Anchor: []byte(anchor), Text: []byte(text), After: after}
	return c.text(ctx, kindInsertText, args, c.opts.callTimeout)
}

// ApplyEdits is the apply_edits tool.
func (c *Client) ApplyEdits(ctx context.Context, path string, edits []sandbox.Edit) (string, error) {
	if err := checkName(kindApplyEdits, "path", path); err != nil {
		return "", err
	}
	args := applyEditsArgs{Path: []byte(path), Edits: make([]wireEdit, len(edits))}
	for i, e := range edits {
		args.Edits[i] = wireEdit{Old: []byte(e.Old), New: []byte(e.New)}
	}
	return c.text(ctx, kindApplyEdits, args, c.opts.callTimeout)
}

// ListDir is the list_dir tool.
func (c *Client) ListDir(ctx context.Context, path string) (string, error) {
	if err := checkName(kindListDir, "path", path); err != nil {
		return "", err
	}
	return c.text(ctx, kindListDir, listDirArgs{Path: []byte(path)}, c.opts.callTimeout)
}

// Grep is the grep tool. Its deadline is its timeout (30 s when not
// positive) plus the command margin.
func (c *Client) Grep(ctx context.Context, args sandbox.GrepArgs) (string, error) {
	for _, f := range []struct{ name, value string }{{"pattern", args.Pattern}, {"path", args.Path}, {"glob", args.Glob}} {
		if err := checkName(kindGrep, f.name, f.value); err != nil {
			return "", err
		}
	}
	timeout := args.Timeout
	if timeout <= 0 {
		timeout = defaultGrepTimeout
	}
	wire := grepArgs{Pattern: []byte(args.Pattern), Path: []byte(args.Path), Glob: []byte(args.Glob), TimeoutMS: timeout.Milliseconds()}
	return c.text(ctx, kindGrep, wire, timeout+c.opts.commandMargin)
}

// Bash runs command in the tree's root with bash -c, killing its process
// group at timeout (which must be at least a millisecond). Its deadline is
// the timeout plus the command margin.
func (c *Client) Bash(ctx context.Context, command string, timeout time.Duration) (BashReply, error) {
	res := BashReply{BashResult: sandbox.BashResult{ExitCode: -1, Timeout: timeout}}
	if timeout < time.Millisecond {
		return res, fmt.Errorf("bash: %w: timeout %v is under a millisecond", ErrBadRequest, timeout)
	}
	d, err := c.call(ctx, kindBash, bashArgs{Command: []byte(command), TimeoutMS: timeout.Milliseconds()}, timeout+c.opts.commandMargin)
	if err != nil {
		return res, err
	}
	res.ExitCode = d.bash.ExitCode
	res.Output = string(d.bash.Output)
	res.Capped = d.bash.Capped
	res.TimedOut = d.bash.TimedOut
	res.LaunchError = d.bash.LaunchError
	res.Leftover = d.bash.Leftover
	res.OOMKilled = d.bash.OOMKill
	return res, nil
}

// BashReply is a command's result and what the server saw after it.
type BashReply struct {
	sandbox.BashResult
	// Leftover counts the command's processes the server could not kill
	// after it (0 but for a process stuck in the kernel).
	Leftover int
	// OOMKilled is set when the server's cgroup counted an OOM kill while
	// the command ran (a server started with -cgroup-oom).
	OOMKilled bool
}

// Budget waits for the server's walk of the tree under way (one follows
// every command) and returns the budget's totals, the last walk's long
// paths and, once the tree was past a cap the hello gave, the breach
// (Violation; kept from then on).
// Writing file tools are accounted as they run, so after those it costs
// a round trip, not a walk.
func (c *Client) Budget(ctx context.Context) (Measurement, error) {
	d, err := c.call(ctx, kindBudget, budgetArgs{}, c.opts.callTimeout)
	if err != nil {
		return Measurement{}, err
	}
	return d.measure, nil
}

// Measure walks the tree as fsops.Measure does, stopping at the entry that
// passes a cap (zero limits: no cap).
func (c *Client) Measure(ctx context.Context, limits sandbox.Limits) (Measurement, error) {
	d, err := c.call(ctx, kindMeasure, measureArgs{MaxBytes: limits.MaxBytes, MaxEntries: limits.MaxEntries}, c.opts.callTimeout)
	if err != nil {
		return Measurement{}, err
	}
	return d.measure, nil
}

// text makes a call answered by a tool's text.
func (c *Client) text(ctx context.Context, kind string, args any, timeout time.Duration) (string, error) {
	d, err := c.call(ctx, kind, args, timeout)
	if err != nil {
		return "", err
	}
	return d.text, nil
}

// checkName refuses a path, pattern or glob over maxPathBytes.
func checkName(kind, field, value string) error {
	if len(value) > maxPathBytes {
		return fmt.Errorf("%s: %w: %s is %d bytes, over the %d-byte limit", kind, ErrRequestTooLarge, field, len(value), maxPathBytes)
	}
	return nil
}
