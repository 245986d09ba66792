//go:build docker

package runs

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/sandbox/docker"
)

// dockerCLI runs the docker CLI (the tests make their own objects with
// it; the store reaches the daemon only through sandbox/docker).
func dockerCLI(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func requireDaemon(t *testing.T) {
	t.Helper()
	if err := exec.Command("docker", "info").Run(); err != nil {
		if os.Getenv("DIRTYWORK_REQUIRE_DOCKER") != "" {
			t.Fatalf("no docker daemon: %v", err)
		}
		t.Skipf("no docker daemon: %v", err)
	}
}

// dockerRun makes a docker run's record and real objects: a created
// container and its two volumes labelled for the run (the container for
// another run when foreign), all removed when the test ends.
func dockerRun(t *testing.T, e *testEnv, repo string, foreign bool) string {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	slug := "runs-docker-test-" + hex.EncodeToString(b)
	labels := []string{"--label", docker.LabelRun + "=" + slug, "--label", docker.LabelRepo + "=" + docker.RepoLabel(repo)}
	dockerCLI(t, append([]string{"volume", "create"}, append(labels, "dw-"+slug+"-work")...)...)
	dockerCLI(t, append([]string{"volume", "create"}, append(labels, "dw-"+slug+"-tools")...)...)
	labelSlug := slug
	if foreign {
		labelSlug = "someone-else"
	}
	cLabels := []string{"--label", docker.LabelRun + "=" + labelSlug, "--label", docker.LabelRepo + "=" + docker.RepoLabel(repo)}
	dockerCLI(t, append(append([]string{"create", "--name", "dw-" + slug, "--network", "none"}, cLabels...), "dirtywork-worker:dev", "/bin/true")...)
	t.Cleanup(func() {
		_ = exec.Command("docker", "rm", "-f", "dw-"+slug).Run()
		_ = exec.Command("docker", "volume", "rm", "-f", "dw-"+slug+"-work", "dw-"+slug+"-tools").Run()
	})
	e.addLaneRun(repo, slug, map[string]any{"sandbox": "docker", "container": "dw-" + slug, "volume": "dw-" + slug + "-work", "export_status": "ok"})
	return slug
}

func TestListAndCleanAgainstTheDaemon(t *testing.T) {
	t.Parallel()
	requireDaemon(t)
	root := t.TempDir()
	e := &testEnv{t: t, root: root, store: Open(root)}
	repo := newRepo(t)
	slug := dockerRun(t, e, repo, false)

	list, err := e.store.List(t.Context(), ListOptions{Leftovers: true})
	if err != nil || len(list) != 1 {
		t.Fatalf("%v %d", err, len(list))
	}
	l := list[0].Leftovers
	if l.DockerErr != nil || l.Container != "created" || l.Volume != Present || !equal(l.OtherObjects, []string{"dw-" + slug + "-tools"}) {
		t.Fatalf("leftovers %+v", l)
	}
	row := Row(list[0])
	if row.Container != "created" || row.Volume != "present" || row.Worktree != "yes" {
		t.Errorf("row %+v", row)
	}

	r := e.store.Clean(t.Context(), slug, CleanOptions{})
	if r.Skipped() {
		t.Fatalf("skipped:\n%s", actions(r))
	}
	mustContain(t, r, "removed-container: dw-"+slug, "removed-volume: dw-"+slug+"-work", "removed-volume: dw-"+slug+"-tools")
	if out, _ := exec.Command("docker", "volume", "ls", "-q", "--filter", "label="+docker.LabelRun+"="+slug).Output(); strings.TrimSpace(string(out)) != "" {
		t.Errorf("volumes left: %s", out)
	}
}

func TestCleanLeavesAContainerLabelledForAnotherRun(t *testing.T) {
	t.Parallel()
	requireDaemon(t)
	root := t.TempDir()
	e := &testEnv{t: t, root: root, store: Open(root)}
	repo := newRepo(t)
	slug := dockerRun(t, e, repo, true)
	r := e.store.Clean(t.Context(), slug, CleanOptions{Force: true})
	mustContain(t, r, "skip-container: dw-"+slug+": labels do not match", "kept-run-dir: ")
	if got := dockerCLI(t, "inspect", "-f", "{{.Name}}", "dw-"+slug); got != "/dw-"+slug {
		t.Errorf("the container was removed: %q", got)
	}
	if got := dockerCLI(t, "volume", "inspect", "-f", "{{.Name}}", "dw-"+slug+"-work"); got != "dw-"+slug+"-work" {
		t.Errorf("the volume was removed: %q", got)
	}
}

func TestReconcileAgainstTheDaemonTouchesOnlyItsRepositorysObjects(t *testing.T) {
	t.Parallel()
	requireDaemon(t)
	root := t.TempDir()
	e := &testEnv{t: t, root: root, store: Open(root)}
	repo := newRepo(t)
	other := newRepo(t) // a repository no record names: its objects are not ours
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	slug := "runs-reconcile-test-" + hex.EncodeToString(b)
	mine := []string{"--label", docker.LabelRun + "=" + slug, "--label", docker.LabelRepo + "=" + docker.RepoLabel(repo)}
	theirs := []string{"--label", docker.LabelRun + "=" + slug + "-x", "--label", docker.LabelRepo + "=" + docker.RepoLabel(other)}
	dockerCLI(t, append(append([]string{"create", "--name", "dw-" + slug, "--network", "none"}, mine...), "dirtywork-worker:dev", "/bin/true")...)
	dockerCLI(t, append(append([]string{"create", "--name", "dw-" + slug + "-x", "--network", "none"}, theirs...), "dirtywork-worker:dev", "/bin/true")...)
	dockerCLI(t, append(append([]string{"volume", "create"}, mine...), "dw-"+slug+"-work")...)
	// A finished run's exited reap marker and the tools volume it names.
	dockerCLI(t, append(append([]string{"volume", "create"}, mine...), "dw-"+slug+"-tools")...)
	dockerCLI(t, append(append([]string{
		"create", "--name", "dw-" + slug + "-reap", "--network", "none",
		"--label", docker.LabelReap + "=dw-" + slug + "-tools",
	}, mine...), "dirtywork-worker:dev", "/bin/true")...)
	dockerCLI(t, "start", "-a", "dw-"+slug+"-reap") // the marker has done its work and exited
	t.Cleanup(func() {
		_ = exec.Command("docker", "rm", "-f", "dw-"+slug, "dw-"+slug+"-x", "dw-"+slug+"-reap").Run()
		_ = exec.Command("docker", "volume", "rm", "-f", "dw-"+slug+"-work", "dw-"+slug+"-tools").Run()
	})
	// One finished run of the repository, so reconcile looks at it.
	e.addLaneRun(repo, slug+"-done", map[string]any{"sandbox": "none"})

	rep, err := e.store.Reconcile(t.Context(), ReconcileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The container is this reconcile's alone to remove. The exited reap
	// marker and its volume may also be taken by any run's reaper working
	// beside this test (markers are finished by whoever looks first): they
	// must be gone, by this reconcile or that reaper.
	if !slices.Contains(rep.Removed, "dw-"+slug) {
		t.Errorf("removed %v, want dw-%s among them (failed %v)", rep.Removed, slug, rep.Failed)
	}
	for _, name := range rep.Removed {
		if !slices.Contains([]string{"dw-" + slug, "dw-" + slug + "-reap", "dw-" + slug + "-tools"}, name) {
			t.Errorf("removed %s, not this repository's finished objects", name)
		}
	}
	if out := dockerCLI(t, "ps", "-a", "-q", "--filter", "name=^dw-"+slug+"-reap$"); out != "" {
		t.Error("the exited reap marker is left")
	}
	if out := dockerCLI(t, "volume", "ls", "-q", "--filter", "name=^dw-"+slug+"-tools$"); out != "" {
		t.Error("the volume the reap marker names is left")
	}
	if out := dockerCLI(t, "ps", "-a", "-q", "--filter", "name=^dw-"+slug+"-x$"); out == "" {
		t.Error("a container of a repository no record names was removed")
	}
	if out := dockerCLI(t, "volume", "ls", "-q", "--filter", "name=^dw-"+slug+"-work$"); out == "" {
		t.Error("a work volume with no record was removed")
	}
}
