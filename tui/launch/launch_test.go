package launch

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	tea "charm.land/bubbletea/v2"

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
