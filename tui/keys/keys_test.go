package keys

import (
	"os"
	"slices"
	"strings"
	"testing"

	"charm.land/bubbles/v2/key"
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

// Off the dashboard q is back, so it may not mean anything else there;
// on the dashboard it quits.
func TestQIsBackOffTheDashboard(t *testing.T) {
	m := Default()
	for name, b := range map[string]*key.Binding{"review.back": &m.Review.Back, "transcript.back": &m.Transcript.Back, "stats.back": &m.Stats.Back} {
		if !slices.Contains(b.Keys(), "q") || !strings.Contains(b.Help().Key, "q") {
			t.Errorf("%s: keys %v, help %q", name, b.Keys(), b.Help().Key)
		}
	}
	for _, bad := range []map[string][]string{
		{"review.accept": {"q"}},
		{"transcript.next": {"q"}},
		{"stats.group": {"q"}},
		{"dashboard.zoom": {"q"}},
	} {
		mm := Default()
		if err := mm.Rebind(bad); err == nil {
			t.Errorf("accepted %v", bad)
		}
	}
}

// A config written when the review's half-page keys were named
// scroll_down and scroll_up still sets them.
func TestRenamedBindingsStillApply(t *testing.T) {
	m := Default()
	if err := m.Rebind(map[string][]string{"review.scroll_down": {"ctrl+f"}, "review.scroll_up": {"ctrl+b"}}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.Review.HalfDown.Keys(), []string{"ctrl+f"}) || !slices.Equal(m.Review.HalfUp.Keys(), []string{"ctrl+b"}) {
		t.Fatalf("half down %v, half up %v", m.Review.HalfDown.Keys(), m.Review.HalfUp.Keys())
	}
	if err := m.Rebind(map[string][]string{"review.scroll_sideways": {"x"}}); err == nil {
		t.Fatal("an unknown name was taken")
	}
}
