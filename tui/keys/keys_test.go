package keys

import (
	"os"
	"strings"
	"testing"
)

func TestDefaultsHaveNoCollisions(t *testing.T) {
	m := Default()
	if err := m.check(); err != nil {
		t.Fatal(err)
	}
}

func TestEveryBindingHasHelp(t *testing.T) {
	m := Default()
	for name, b := range m.Bindings() {
		if len(b.Keys()) == 0 || b.Help().Key == "" || b.Help().Desc == "" {
			t.Errorf("%s: keys %v help %+v", name, b.Keys(), b.Help())
		}
	}
}

func TestRebindUpdatesHelp(t *testing.T) {
	m := Default()
	if err := m.Rebind(map[string][]string{"review.accept": {"y", "ctrl+a"}}); err != nil {
		t.Fatal(err)
	}
	if h := m.Review.Accept.Help(); h.Key != "y/ctrl+a" || h.Desc != "accept" {
		t.Fatalf("help = %+v", h)
	}
	for _, bad := range []map[string][]string{
		{"review.accept": {}},
		{"review.accept": {" a"}},
		{"common.quit": {"j"}}, // j moves down in the list
	} {
		mm := Default()
		if err := mm.Rebind(bad); err == nil {
			t.Errorf("accepted %v", bad)
		}
	}
}

// The README lists every binding name a config file may use.
func TestReadmeNamesEveryBinding(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	m := Default()
	for name := range m.Bindings() {
		ctx, action, _ := strings.Cut(name, ".")
		if !strings.Contains(readme, "`"+ctx+".{") || !strings.Contains(readme, action) {
			t.Errorf("the README does not name %s", name)
		}
	}
}
