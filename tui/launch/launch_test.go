package launch

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/dirtywork/dirtywork/tui/backend"
	"github.com/dirtywork/dirtywork/tui/keys"
	"github.com/dirtywork/dirtywork/tui/theme"
)

func TestCompleteDirs(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"shop", "shopfront", ".hidden", "other"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "shopping.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got := completeDirs(filepath.Join(dir, "sho"))
	want := []string{filepath.Join(dir, "shop") + "/", filepath.Join(dir, "shopfront") + "/"}
	if !slices.Equal(got, want) {
		t.Fatalf("completions = %v, want %v", got, want)
	}
	if got := completeDirs(dir + "/"); len(got) != 3 {
		t.Fatalf("a directory's completions (hidden ones left out) = %v", got)
	}
	if got := completeDirs(filepath.Join(dir, "missing", "x")); got != nil {
		t.Fatalf("completions in a missing directory = %v", got)
	}
}

func newForm(d Defaults) Model {
	km := keys.Default()
	f := New(theme.New(theme.Dark), &km.Form, d)
	f.SetSize(100, 30)
	return f
}

func TestSpecValidates(t *testing.T) {
	f := newForm(Defaults{})
	if _, err := f.Spec(); err == nil {
		t.Fatal("an empty form gave a spec")
	}
	f = newForm(Defaults{Repo: "/src/shop", Model: "m", Sandbox: "none", MaxTurns: 12, BaseURL: "http://x/v1"})
	f.task.SetValue("  do it  ")
	spec, err := f.Spec()
	if err != nil || spec.Task != "do it" || spec.Sandbox != "none" || spec.MaxTurns != 12 || spec.BaseURL != "http://x/v1" || spec.Repo != "/src/shop" {
		t.Fatalf("spec %+v, %v", spec, err)
	}
	f.maxTurns.SetValue("0")
	if _, err := f.Spec(); err == nil {
		t.Fatal("max turns 0 accepted")
	}
}

func TestSubmitAndCycle(t *testing.T) {
	f := newForm(Defaults{Repo: "/src/shop", Sandbox: "docker"})
	f, _ = f.Update(ModelsMsg{Models: []string{"a", "b"}})
	if f.model.Value() != "a" {
		t.Fatalf("the first served model is not the default: %q", f.model.Value())
	}
	// To the sandbox field, and change it.
	for f.Focused() != "sandbox" {
		f, _ = f.Update(tea.KeyPressMsg{Code: tea.KeyTab})
	}
	f, _ = f.Update(tea.KeyPressMsg{Code: 'n', Mod: tea.ModCtrl})
	if Sandboxes[f.sandbox] != "none" {
		t.Fatalf("sandbox = %s", Sandboxes[f.sandbox])
	}
	f.task.SetValue("t")
	f, _ = f.Update(tea.KeyPressMsg{Code: 's', Mod: tea.ModCtrl})
	msg, ok := f.Take().(SubmitMsg)
	if !ok || msg.Spec.Sandbox != "none" || msg.Spec.Model != "a" {
		t.Fatalf("submit = %+v", msg)
	}
}

func keyOf(s string) tea.KeyPressMsg {
	switch s {
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "ctrl+f", "ctrl+n", "ctrl+s":
		return tea.KeyPressMsg{Code: rune(s[5]), Mod: tea.ModCtrl}
	}
	return tea.KeyPressMsg{Code: rune(s[0]), Text: s}
}

// press sends keys, running the commands they return (completions) the
// way the program would.
func press(t *testing.T, f Model, keys ...string) Model {
	t.Helper()
	for _, k := range keys {
		var cmd tea.Cmd
		f, cmd = f.Update(keyOf(k))
		for cmd != nil {
			msg := cmd()
			next := tea.Cmd(nil)
			if c, ok := msg.(CompletionsMsg); ok {
				f, next = f.Update(c)
			}
			cmd = next
		}
	}
	return f
}

func focusOn(t *testing.T, f Model, field string) Model {
	t.Helper()
	for range fieldCount {
		if f.Focused() == field {
			return f
		}
		f, _ = f.Update(keyOf("tab"))
	}
	t.Fatalf("no field %s", field)
	return f
}

// tab only moves: after ctrl+n picked a model, tab leaves the name as it
// is (it used to complete it into "fake/coder-aoder-next").
func TestTabOnlyMovesBetweenFields(t *testing.T) {
	f := newForm(Defaults{Repo: "/src/shop", Model: "fake/coder"})
	f, _ = f.Update(ModelsMsg{Models: []string{"fake/coder-next", "fake/coder-aoder"}})
	f = focusOn(t, f, "model")
	f = press(t, f, "ctrl+n", "tab")
	if f.Focused() != "sandbox" || !slices.Contains([]string{"fake/coder-next", "fake/coder-aoder"}, f.model.Value()) {
		t.Fatalf("focus %s, model %q", f.Focused(), f.model.Value())
	}
	if strings.Contains(f.View(), "aoder-next") {
		t.Fatalf("the form shows a name that does not launch:\n%s", f.View())
	}
}

// ctrl+f completes: as far as the candidates agree, then a list when
// they part; a unique one whole.
func TestCompletionIsAKeyOfItsOwn(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"shop", "shopfront", "other"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f := newForm(Defaults{})
	f = focusOn(t, f, "repo")
	f.repo.SetValue(filepath.Join(dir, "sh"))
	f.repo.CursorEnd()
	f = press(t, f, "ctrl+f")
	if got := f.repo.Value(); got != filepath.Join(dir, "shop") {
		t.Fatalf("completed to %q, want the common part", got)
	}
	f = press(t, f, "ctrl+f")
	view := f.View()
	if !strings.Contains(view, filepath.Join(dir, "shop")+"/") || !strings.Contains(view, filepath.Join(dir, "shopfront")+"/") {
		t.Fatalf("an ambiguous completion lists no candidates:\n%s", view)
	}
	f = press(t, f, "f", "ctrl+f")
	if got := f.repo.Value(); got != filepath.Join(dir, "shopfront")+"/" {
		t.Fatalf("unique completion %q", got)
	}
	if strings.Contains(f.View(), filepath.Join(dir, "shop")+"/\n") {
		t.Fatal("the list outlived the next key")
	}

	// The model from the server's list.
	f, _ = f.Update(ModelsMsg{Models: []string{"qwen/qwen3-coder", "qwen/qwen2.5-coder", "devstral"}})
	f = focusOn(t, f, "model")
	f.model.SetValue("qw")
	f = press(t, f, "ctrl+f")
	if f.model.Value() != "qwen/qwen" {
		t.Fatalf("model completed to %q", f.model.Value())
	}
	f = press(t, f, "3", "ctrl+f")
	if f.model.Value() != "qwen/qwen3-coder" {
		t.Fatalf("model completed to %q", f.model.Value())
	}
}

// Only a model the server lists can be launched, once the list is known;
// the refusal says what is served.
func TestOnlyAListedModelLaunches(t *testing.T) {
	f := newForm(Defaults{Repo: "/src/shop", Model: "qwen/qwen3-codr"})
	f.task.SetValue("fix it")
	if _, err := f.Spec(); err != nil {
		t.Fatalf("without the server's list the launch's own preflight decides: %v", err)
	}
	f, _ = f.Update(ModelsMsg{Models: []string{"qwen/qwen3-coder"}})
	_, err := f.Spec()
	if err == nil || !strings.Contains(err.Error(), "qwen/qwen3-coder") {
		t.Fatalf("an unlisted model: %v", err)
	}
	f = press(t, f, "ctrl+s")
	if f.Take() != nil {
		t.Fatal("an unlisted model was submitted")
	}
	// The refusal stays until the next key: a cursor blink (any message
	// but a key) does not take it away.
	type blink struct{}
	f, _ = f.Update(blink{})
	if !strings.Contains(f.View(), "is not a model the server lists") {
		t.Fatalf("the refusal went without a key:\n%s", f.View())
	}
}

// Up and down leave the task box only from its first and last line.
func TestArrowsLeaveTheTaskBox(t *testing.T) {
	f := newForm(Defaults{Repo: "/src/shop"})
	f = focusOn(t, f, "task")
	f.task.SetValue("first line\nsecond line")
	f = press(t, f, "up") // to the first line
	if f.Focused() != "task" {
		t.Fatalf("up from the second line left the box: %s", f.Focused())
	}
	f = press(t, f, "up")
	if f.Focused() != "repo" {
		t.Fatalf("up from the first line: %s", f.Focused())
	}
	f = press(t, f, "down")
	f.task.SetValue("one\ntwo")
	f = press(t, f, "down")
	if f.Focused() != "model" {
		t.Fatalf("down from the last line: %s", f.Focused())
	}
}

// Each repository's last model, sandbox and verify command come back in
// the next form, from the file.
func TestFormRemembersEachRepository(t *testing.T) {
	path := filepath.Join(t.TempDir(), "launch.json")
	mem := LoadMemory(path)
	f := newForm(Defaults{Repo: "/src/shop", Model: "m1", Sandbox: "docker", Memory: mem})
	f, _ = f.Update(ModelsMsg{Models: []string{"m1", "m2"}})
	f = focusOn(t, f, "model")
	f = press(t, f, "ctrl+n") // m2
	f = focusOn(t, f, "sandbox")
	f = press(t, f, "ctrl+n") // none
	f.verify.SetValue("make test")
	f.task.SetValue("fix it")
	var cmd tea.Cmd
	f, cmd = f.Update(keyOf("ctrl+s"))
	if _, ok := f.Take().(SubmitMsg); !ok || cmd == nil {
		t.Fatal("no submit")
	}
	cmd()

	again := newForm(Defaults{Repo: "/src/shop", Model: "m1", Sandbox: "docker", Memory: LoadMemory(path)})
	if again.model.Value() != "m2" || Sandboxes[again.sandbox] != "none" || again.verify.Value() != "make test" {
		t.Fatalf("recalled model %q sandbox %s verify %q", again.model.Value(), Sandboxes[again.sandbox], again.verify.Value())
	}
	// Another repository keeps the defaults; typing a remembered one in
	// fills it when the field is left.
	other := newForm(Defaults{Model: "m1", Sandbox: "docker", Memory: LoadMemory(path)})
	if other.model.Value() != "m1" {
		t.Fatalf("a new repository got %q", other.model.Value())
	}
	other.repo.SetValue("/src/shop")
	other = press(t, other, "tab")
	if other.model.Value() != "m2" || other.verify.Value() != "make test" {
		t.Fatalf("leaving the repository field: model %q verify %q", other.model.Value(), other.verify.Value())
	}
	// A damaged file is an empty memory, not an error.
	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := LoadMemory(path).Recall("/src/shop"); ok {
		t.Fatal("a damaged file recalled something")
	}
}

// A refusal is wrapped to the form's width, never cut.
func TestRefusalIsWrapped(t *testing.T) {
	km := keys.Default()
	f := New(theme.New(theme.NoColor), &km.Form, Defaults{Repo: "/src/shop"})
	f.SetSize(80, 24)
	f.SetRefusal(&backend.RefusedError{
		Msg:  "the docker engine does not answer at unix:///var/run/docker.sock: dial unix /var/run/docker.sock: connect: no such file or directory",
		Hint: "start it (sudo systemctl start docker) or run with --sandbox none",
	})
	view := f.View()
	for _, word := range []string{"no such file or directory", "--sandbox none"} {
		if !strings.Contains(strings.Join(strings.Fields(view), " "), word) {
			t.Fatalf("%q is not readable in:\n%s", word, view)
		}
	}
	for l := range strings.SplitSeq(view, "\n") {
		if w := lipgloss.Width(l); w > 80 {
			t.Fatalf("a line of %d columns:\n%s", w, view)
		}
	}
}
