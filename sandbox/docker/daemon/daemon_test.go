package daemon

import (
	"os"
	"path/filepath"
	"testing"
)

func TestNamesFor(t *testing.T) {
	t.Parallel()
	n, err := NamesFor("run-1")
	if err != nil {
		t.Fatal(err)
	}
	want := Names{
		Container: "dw-run-1", WorkVolume: "dw-run-1-work", ToolsVolume: "dw-run-1-tools",
		Setup: "dw-run-1-setup", Measurer: "dw-run-1-measure", Egress: "dw-run-1-egress",
	}
	if n != want {
		t.Errorf("names %+v, want %+v", n, want)
	}
	for _, bad := range []string{"", "bad/slug", "-lead", "a b", string(make([]byte, 200))} {
		if _, err := NamesFor(bad); err == nil {
			t.Errorf("slug %q was accepted", bad)
		}
	}
}

// The repository label is the same for every path to one repository, and
// a valid label whatever the path holds.
func TestRepoLabel(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo with spaces:and=signs")
	if err := os.Mkdir(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(repo, link); err != nil {
		t.Fatal(err)
	}
	l := RepoLabel(repo)
	if len(l) != 64 || RepoLabel(link) != l || RepoLabel(repo+"/") != l {
		t.Errorf("labels %q, %q, %q", l, RepoLabel(link), RepoLabel(repo+"/"))
	}
	if RepoLabel(dir) == l {
		t.Error("two repositories share a label")
	}
	if got := RunLabels("r", repo); got[LabelRun] != "r" || got[LabelRepo] != l || len(got) != 2 {
		t.Errorf("run labels %v", got)
	}
}

func TestStateSucceeded(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s    State
		want bool
	}{
		{State{Status: "exited"}, true},
		{State{Status: "exited", ExitCode: 1}, false},
		{State{Status: "running", Running: true}, false},
		{State{Status: "created"}, false},
	} {
		if got := tc.s.Succeeded(); got != tc.want {
			t.Errorf("%+v: %v, want %v", tc.s, got, tc.want)
		}
	}
}
