package toolbox

import (
	"context"

	"github.com/dirtywork/dirtywork/sandbox"
)

// FileTools are the file tools, grep and list_dir of a sandbox.Workspace
// answered by a tool server: each is one Client call, made through Call,
// which the workspace supplies (it picks the client, waits for the tree,
// accounts a writing tool against the budget and turns a failure into the
// run's end). Both sandboxes embed it, so the mapping of the tools onto
// the protocol is written once.
type FileTools struct {
	// Call makes one call: op is the tool's name, mutates is set for the
	// tools that can change the tree.
	Call func(ctx context.Context, op string, mutates bool, f func(*Client) (string, error)) (string, error)
}

// ReadFile is the read_file tool.
func (t FileTools) ReadFile(ctx context.Context, path string, offset, limit int) (string, error) {
	return t.Call(ctx, "read_file", false, func(c *Client) (string, error) { return c.ReadFile(ctx, path, offset, limit) })
}

// WriteFile is the write_file tool.
func (t FileTools) WriteFile(ctx context.Context, path, content string) (string, error) {
	return t.Call(ctx, "write_file", true, func(c *Client) (string, error) { return c.WriteFile(ctx, path, content) })
}

// EditFile is the edit_file tool.
func (t FileTools) EditFile(ctx context.Context, path, oldString, newString string) (string, error) {
	return t.Call(ctx, "edit_file", true, func(c *Client) (string, error) { return c.EditFile(ctx, path, oldString, newString) })
}

// InsertText is the insert_before and insert_after tools.
func (t FileTools) InsertText(ctx context.Context, path, anchor, text string, after bool) (string, error) {
	return t.Call(ctx, "insert_text", true, func(c *Client) (string, error) { return c.InsertText(ctx, path, anchor, text, after) })
}

// ApplyEdits is the apply_edits tool.
func (t FileTools) ApplyEdits(ctx context.Context, path string, edits []sandbox.Edit) (string, error) {
	return t.Call(ctx, "apply_edits", true, func(c *Client) (string, error) { return c.ApplyEdits(ctx, path, edits) })
}

// ListDir is the list_dir tool.
func (t FileTools) ListDir(ctx context.Context, path string) (string, error) {
	return t.Call(ctx, "list_dir", false, func(c *Client) (string, error) { return c.ListDir(ctx, path) })
}

// Grep is the grep tool.
func (t FileTools) Grep(ctx context.Context, args sandbox.GrepArgs) (string, error) {
	return t.Call(ctx, "grep", false, func(c *Client) (string, error) { return c.Grep(ctx, args) })
}
