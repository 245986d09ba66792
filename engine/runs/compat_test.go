package runs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The action lines of `runs clean` for the spec's examples, compared with
// a fixture line by line.
func TestCleanActionLinesMatchThe091Fixture(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/clean-0.9.1.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{}
	slug := ""
	for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		if rest, ok := strings.CutPrefix(line, "# runs clean "); ok {
			slug, _, _ = strings.Cut(rest, ":")
			continue
		}
		want[slug] = append(want[slug], line)
	}
	e := newEnv(t)
	repo := newRepo(t)
	for _, s := range []string{"slug1", "slug2", "slug3", "slug4"} {
		rec := map[string]any{"sandbox": "docker", "container": "dw-" + s, "export_status": "ok"}
		if s != "slug3" {
			rec["volume"] = "dw-" + s + "-work"
		}
		wt := e.addLaneRun(repo, s, rec)
		if s == "slug4" {
			if err := os.RemoveAll(wt); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(filepath.Join(e.root, s, "run.json")); err != nil {
				t.Fatal(err)
			}
			e.rewrite(s, map[string]any{
				"repo": repo, "worktree": wt, "branch": "dirtywork/" + s,
				"base_commit": git(t, repo, "rev-parse", "main"), "sandbox": "docker",
			})
		}
	}
	e.docker.addContainer("dw-slug1", "exited", "slug1", repo)
	e.docker.addVolume("dw-slug1-work", "slug1", repo)
	e.docker.addContainer("dw-slug3", "exited", "other", repo)
	for _, s := range []string{"slug1", "slug2", "slug3", "slug4"} {
		r := e.store.Clean(t.Context(), s, CleanOptions{})
		wt := filepath.Join(repo, ".worktrees", "dw-"+s)
		var got []string
		for _, a := range r.Actions {
			l := strings.ReplaceAll(a.String(), filepath.Join(e.root, s), "{RUNDIR}")
			got = append(got, strings.ReplaceAll(l, wt, "{WT}"))
		}
		if strings.Join(got, "\n") != strings.Join(want[s], "\n") {
			t.Errorf("%s:\n%s\nwant\n%s", s, strings.Join(got, "\n"), strings.Join(want[s], "\n"))
		}
	}
}

// rewrite replaces a run's run.json.
func (e *testEnv) rewrite(slug string, rec map[string]any) {
	e.t.Helper()
	rec["slug"], rec["status"] = slug, "completed"
	writeFile(e.t, filepath.Join(e.root, slug, "run.json"), mustJSON(e.t, rec))
}
