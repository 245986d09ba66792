// Package tools is the tool registry of a run: the ten tools' schemas,
// argument validation and coercion, the execution pipeline (deadline,
// timeout injection, guardrails, output caps) and dispatch to a
// sandbox.Workspace.
package tools

import (
	"encoding/json"
	"slices"
	"sync"

	"github.com/dirtywork/dirtywork/engine/provider"
)

// Tool names, in the contract's order.
const (
	ReadFile     = "read_file"
	WriteFile    = "write_file"
	EditFile     = "edit_file"
	ApplyEdits   = "apply_edits"
	InsertBefore = "insert_before"
	InsertAfter  = "insert_after"
	ListDir      = "list_dir"
	Grep         = "grep"
	Bash         = "bash"
	Finish       = "finish"
)

// Names lists the ten tools in the contract's order.
var Names = []string{ReadFile, WriteFile, EditFile, ApplyEdits, InsertBefore, InsertAfter, ListDir, Grep, Bash, Finish}

// mutating tools change the tree when they succeed.
var mutating = map[string]bool{WriteFile: true, EditFile: true, ApplyEdits: true, InsertBefore: true, InsertAfter: true}

// IsMutating reports whether a successful call of tool changes the tree.
func IsMutating(tool string) bool { return mutating[tool] }

// param describes one argument.
type param struct {
	name     string
	typ      string // string, integer, number, boolean, array
	desc     string
	required bool
	// def is the default filled in when the argument is absent; nullable
	// says an explicit null is accepted (the default is null).
	def      any
	nullable bool
	// hidden parameters are not in the schema the model sees.
	hidden bool
	// nested is the full JSON schema of an array or object parameter.
	nested *schemaNode
}

// spec describes one tool.
type spec struct {
	name   string
	desc   string
	params []param
	// inputCap bounds the UTF-8 bytes of all string values in the
	// arguments (0: none).
	inputCap int
}

// editsSchema is apply_edits' nested schema.
var editsSchema = &schemaNode{
	Type:     "array",
	MinItems: ptr(1),
	MaxItems: ptr(100),
	Items: &schemaNode{
		Type: "object",
		Properties: []namedSchema{
			{"old", &schemaNode{Type: "string", Description: "Exact text to replace; must occur exactly once in the file at that point."}},
			{"new", &schemaNode{Type: "string", Description: "Replacement text."}},
		},
		Required:             []string{"old", "new"},
		AdditionalProperties: ptr(false),
	},
}

func ptr[T any](v T) *T { return &v }

// specs are the ten tools, in order.
var specs = []spec{
	{name: ReadFile, desc: "Read a text file, with line numbers. Use offset and limit to page through long files.", params: []param{
		{name: "path", typ: "string", desc: "File path relative to the worktree root.", required: true},
		{name: "offset", typ: "integer", desc: "First line to show, 0-based (default 0).", def: 0},
		{name: "limit", typ: "integer", desc: "Number of lines to show (default 400).", def: 400},
	}},
	{name: WriteFile, desc: "Create or overwrite a file with the given content. Parent directories are created.", params: []param{
		{name: "path", typ: "string", desc: "File path relative to the worktree root.", required: true},
		{name: "content", typ: "string", desc: "The complete new content of the file.", required: true},
	}},
	{name: EditFile, desc: "Replace one exact occurrence of old_string with new_string in a file. old_string must occur exactly once.", params: []param{
		{name: "path", typ: "string", desc: "File path relative to the worktree root.", required: true},
		{name: "old_string", typ: "string", desc: "Exact text to replace, with enough context to be unique.", required: true},
		{name: "new_string", typ: "string", desc: "Replacement text.", required: true},
	}},
	{name: ApplyEdits, desc: "Apply several exact replacements to one file, in order; each old text must occur exactly once at its turn. If any edit fails, none is applied.", inputCap: 2 << 20, params: []param{
		{name: "path", typ: "string", desc: "File path relative to the worktree root.", required: true},
		{name: "edits", typ: "array", desc: "The replacements, applied in order.", required: true, nested: editsSchema},
	}},
	{name: InsertBefore, desc: "Insert text on new lines before the line holding anchor. anchor must occur exactly once.", params: []param{
		{name: "path", typ: "string", desc: "File path relative to the worktree root.", required: true},
		{name: "anchor", typ: "string", desc: "Exact text that identifies the line(s) to insert before.", required: true},
		{name: "text", typ: "string", desc: "Text to insert.", required: true},
	}},
	{name: InsertAfter, desc: "Insert text on new lines after the line holding anchor. anchor must occur exactly once.", params: []param{
		{name: "path", typ: "string", desc: "File path relative to the worktree root.", required: true},
		{name: "anchor", typ: "string", desc: "Exact text that identifies the line(s) to insert after.", required: true},
		{name: "text", typ: "string", desc: "Text to insert.", required: true},
	}},
	{name: ListDir, desc: "List a directory's entries with their sizes.", params: []param{
		{name: "path", typ: "string", desc: "Directory path relative to the worktree root (default \".\").", def: "."},
	}},
	{name: Grep, desc: "Search file contents with a regular expression. Respects .gitignore.", params: []param{
		{name: "pattern", typ: "string", desc: "Regular expression to search for.", required: true},
		{name: "path", typ: "string", desc: "File or directory to search (default \".\").", def: "."},
		{name: "glob", typ: "string", desc: "Only search files whose name matches this glob, e.g. \"*.go\".", def: nil, nullable: true},
		{name: "timeout", typ: "integer", def: 30, hidden: true},
	}},
	{name: Bash, desc: "Run a shell command in the worktree root and return its exit code and output. Use it to explore, build and test, never to edit files.", params: []param{
		{name: "command", typ: "string", desc: "The command, run with bash -c.", required: true},
		{name: "timeout", typ: "integer", desc: "Seconds before the command is killed (default 120, at most 600).", def: 120},
	}},
	{name: Finish, desc: "End the run. Call it when the task is done, with a summary of what you changed and which commands you ran.", params: []param{
		{name: "summary", typ: "string", desc: "Summary of the changes and of the commands run to verify them.", required: true},
	}},
}

var specByName = func() map[string]*spec {
	m := make(map[string]*spec, len(specs))
	for i := range specs {
		m[specs[i].name] = &specs[i]
	}
	return m
}()

// Schemas returns the ten tools as the provider sends them.
// They are rendered once: every model request sends them.
func Schemas() []provider.Tool {
	return slices.Clone(schemas())
}

var schemas = sync.OnceValue(func() []provider.Tool {
	out := make([]provider.Tool, 0, len(specs))
	for _, s := range specs {
		out = append(out, provider.Tool{Name: s.name, Description: s.desc, Parameters: s.parameters()})
	}
	return out
})

// parameters renders the JSON schema of a tool's arguments: each property
// is {"type"} plus "description" when non-empty; a nested parameter renders
// its schema plus the description.
func (s spec) parameters() json.RawMessage {
	props := orderedObject{}
	var required []string
	for _, p := range s.params {
		if p.hidden {
			continue
		}
		var node *schemaNode
		if p.nested != nil {
			cp := *p.nested
			cp.Description = p.desc
			node = &cp
		} else {
			node = &schemaNode{Type: p.typ, Description: p.desc}
		}
		props = append(props, member{p.name, node})
		if p.required {
			required = append(required, p.name)
		}
	}
	if required == nil {
		required = []string{}
	}
	out := orderedObject{{"type", "object"}, {"properties", props}, {"required", required}}
	data, err := json.Marshal(out)
	if err != nil {
		panic(err) // static data: a failure is a programming error
	}
	return data
}
