package bench

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/sandbox/docker/daemon"
	"github.com/dirtywork/dirtywork/sandbox/docker/workspace"
)

// fakeRunner answers RunAcceptance with a canned result and records the
// specs it was given.
type fakeRunner struct {
	res   workspace.AcceptanceResult
	err   error
	specs []workspace.AcceptanceSpec
}

func (f *fakeRunner) RunAcceptance(_ context.Context, spec workspace.AcceptanceSpec) (workspace.AcceptanceResult, error) {
	f.specs = append(f.specs, spec)
	return f.res, f.err
}

func TestScore(t *testing.T) {
	t.Parallel()
	f, err := LoadFixture("task", validFixture())
	if err != nil {
		t.Fatal(err)
	}
	intact := maps.Clone(f.Acceptance.Hashes)
	tests := []struct {
		name        string
		res         workspace.AcceptanceResult
		err         error
		want        string
		wantTimeout bool
		reason      string
	}{
		{"exit 0", workspace.AcceptanceResult{Hashes: intact, Ran: true, Output: []byte("ok\n")}, nil, AcceptancePass, false, ""},
		{"exit 1", workspace.AcceptanceResult{Hashes: intact, Ran: true, ExitCode: 1}, nil, AcceptanceFail, false, "exited with 1"},
		{"killed", workspace.AcceptanceResult{Hashes: intact, Ran: true, ExitCode: 137}, nil, AcceptanceFail, false, "exited with 137"},
		{"hangs", workspace.AcceptanceResult{Hashes: intact, Ran: true, ExitCode: 137, TimedOut: true}, nil, AcceptanceFail, true, "still running after 7s"},
		{"checker changed", workspace.AcceptanceResult{Hashes: map[string]string{"acceptance/check.py": strings.Repeat("0", 64)}}, nil, AcceptanceGamed, false, "acceptance/check.py (changed)"},
		{"checker gone", workspace.AcceptanceResult{Hashes: map[string]string{}}, nil, AcceptanceGamed, false, "acceptance/check.py (missing or not a regular file)"},
		{"changed, though it ran", workspace.AcceptanceResult{Hashes: map[string]string{}, Ran: true}, nil, AcceptanceGamed, false, "missing"},
		{"not run", workspace.AcceptanceResult{Hashes: intact}, nil, AcceptanceSkipped, false, "did not run"},
		{"no image", workspace.AcceptanceResult{}, workspace.ErrImageMissing, AcceptanceSkipped, false, "image"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			runner := &fakeRunner{res: tt.res, err: tt.err}
			s := Scorer{Runner: runner, Image: "img:1", Timeout: 7 * time.Second, OutputCap: 99, Labels: map[string]string{"k": "v"}}
			got := s.Score(t.Context(), f, Tree{Dir: "/tmp/tree"})
			if got.Outcome != tt.want || got.TimedOut != tt.wantTimeout || !strings.Contains(got.Detail, tt.reason) {
				t.Errorf("Score = %+v, want %s (timed out %v) saying %q", got, tt.want, tt.wantTimeout, tt.reason)
			}
			if tt.err != nil && !errors.Is(got.Err, tt.err) {
				t.Errorf("Err = %v, want %v", got.Err, tt.err)
			}
			if tt.want == AcceptancePass && got.Output != "ok\n" {
				t.Errorf("Output = %q", got.Output)
			}
			if len(runner.specs) != 1 {
				t.Fatalf("%d acceptance runs, want 1", len(runner.specs))
			}
			spec := runner.specs[0]
			if spec.Image != "img:1" || spec.TreeDir != "/tmp/tree" || spec.Volume != "" || spec.Command != f.Acceptance.Command ||
				!maps.Equal(spec.Guard, f.Acceptance.Hashes) || spec.Timeout != 7*time.Second || spec.OutputCap != 99 || spec.Labels["k"] != "v" {
				t.Errorf("spec = %+v", spec)
			}
			// The checker handed over is the fixture's acceptance/.
			if b, err := fs.ReadFile(spec.Acceptance, "check.py"); err != nil || string(b) != "print('ok')\n" {
				t.Errorf("the checker's check.py: %q, %v", b, err)
			}
		})
	}
}

// A block that cannot be checked, or a tree given wrongly, is skipped
// before any container is asked for.
func TestScoreSkipsWithoutDocker(t *testing.T) {
	t.Parallel()
	good, err := LoadFixture("task", validFixture())
	if err != nil {
		t.Fatal(err)
	}
	noCommand, noHashes, relative, noFiles := good, good, good, good
	noCommand.Acceptance.Command = ""
	noHashes.Acceptance.Hashes = nil
	relative.Acceptance.Command = "python3 acceptance/check.py"
	noFiles.FS = nil
	for name, c := range map[string]struct {
		f    Fixture
		tree Tree
	}{
		"no command":         {noCommand, Tree{Dir: "/t"}},
		"no hashes":          {noHashes, Tree{Dir: "/t"}},
		"worktree checker":   {relative, Tree{Dir: "/t"}},
		"no files":           {noFiles, Tree{Dir: "/t"}},
		"no tree":            {good, Tree{}},
		"two trees":          {good, Tree{Dir: "/t", Volume: "v"}},
		"volume and no hash": {noHashes, Tree{Volume: "v"}},
	} {
		runner := &fakeRunner{}
		got := Scorer{Runner: runner}.Score(t.Context(), c.f, c.tree)
		if got.Outcome != AcceptanceSkipped || got.Err == nil || len(runner.specs) != 0 {
			t.Errorf("%s: Score = %+v after %d runs, want skipped with no run", name, got, len(runner.specs))
		}
	}
}

// The volume form reaches the runner as a volume.
func TestScoreVolume(t *testing.T) {
	t.Parallel()
	f, err := LoadFixture("task", validFixture())
	if err != nil {
		t.Fatal(err)
	}
	runner := &fakeRunner{res: workspace.AcceptanceResult{Hashes: f.Acceptance.Hashes, Ran: true}}
	if got := (Scorer{Runner: runner}).Score(t.Context(), f, Tree{Volume: "dw-x-work"}); got.Outcome != AcceptancePass {
		t.Errorf("Score = %+v", got)
	}
	if s := runner.specs[0]; s.Volume != "dw-x-work" || s.TreeDir != "" {
		t.Errorf("spec = %+v", s)
	}
}

// The glue a sweep calls: a case's task staged by name, its tree scored
// on the engine it ran on, the result as the sweep records it.
func TestSweepGlue(t *testing.T) {
	t.Parallel()
	f, err := LoadFixture("task", validFixture())
	if err != nil {
		t.Fatal(err)
	}
	fixtures := []Fixture{f}
	parent := t.TempDir()
	staged, err := (Stager{Fixtures: fixtures, Parent: parent}).Stage(t.Context(), "task")
	if err != nil {
		t.Fatal(err)
	}
	if staged.Task != "do it" || filepath.Dir(staged.Repo) != mustResolve(t, parent) {
		t.Errorf("staged %+v", staged)
	}
	if err := staged.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(parent); len(left) != 0 {
		t.Errorf("Cleanup left %v", left)
	}
	if _, err := (Stager{Fixtures: fixtures}).Stage(t.Context(), "nope"); !errors.Is(err, ErrNoFixture) {
		t.Errorf("staging an unknown task: %v", err)
	}

	runner := &fakeRunner{res: workspace.AcceptanceResult{Hashes: f.Acceptance.Hashes, Ran: true, ExitCode: 1, Output: []byte("FAIL: x")}}
	var hosts []string
	cs := CaseScorer{Fixtures: fixtures, Timeout: time.Second, Runner: func(host string) (AcceptanceRunner, error) {
		hosts = append(hosts, host)
		if host == "down" {
			return nil, daemon.ErrDaemonUnreachable
		}
		return runner, nil
	}}
	got := cs.Score(t.Context(), ScoreRequest{Task: "task", Tree: "/runs/x/worktree", Image: "img:2", Host: "tcp://h:2375"})
	if got.Outcome != AcceptanceFail || got.Output != "FAIL: x" || !strings.Contains(got.Detail, "exited with 1") || got.Seconds < 0 {
		t.Errorf("Score = %+v", got)
	}
	if s := runner.specs[0]; s.TreeDir != "/runs/x/worktree" || s.Image != "img:2" || s.Timeout != time.Second {
		t.Errorf("spec = %+v", s)
	}
	if got := cs.Score(t.Context(), ScoreRequest{Task: "task", Tree: "/t", Host: "down"}); got.Outcome != AcceptanceSkipped || !strings.Contains(got.Detail, "unreachable") {
		t.Errorf("an engine that is down: %+v", got)
	}
	if got := cs.Score(t.Context(), ScoreRequest{Task: "nope", Tree: "/t"}); got.Outcome != AcceptanceSkipped {
		t.Errorf("an unknown task: %+v", got)
	}
	if !slices.Equal(hosts, []string{"tcp://h:2375", "down"}) {
		t.Errorf("runners asked for %q", hosts)
	}
}
