package host

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWorkerCommitsAreImported(t *testing.T) {
	r := newTestRepo(t)
	cfg := r.config()
	cfg.AllowCommit = true
	w := open(t, cfg)
	out, code := run(t, w, "echo feature > feature.txt && git add feature.txt && git commit -q -m 'add feature' && "+
		"echo more >> feature.txt && git commit -q -am 'more feature' && echo wip > wip.txt && git rev-parse HEAD")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	tip := strings.TrimSpace(out)
	fin, err := w.Finalize(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(r.git(t, r.repo, "rev-parse", r.branch)); got != tip {
		t.Fatalf("the branch is at %s, want the worker's tip %s", got, tip)
	}
	log := r.git(t, r.repo, "log", "--format=%an <%ae> %s", r.base+".."+r.branch)
	if log != "dirtywork <dirtywork@localhost> more feature\ndirtywork <dirtywork@localhost> add feature\n" {
		t.Errorf("imported history:\n%s", log)
	}
	r.git(t, r.repo, "fsck", "--strict", "--no-dangling")
	// files_changed is against the base, commits included.
	if strings.Join(fin.FilesChanged, ",") != "feature.txt,wip.txt" {
		t.Errorf("files_changed %q", fin.FilesChanged)
	}
	// The lane's index is the tip's: only the uncommitted work shows.
	if status := r.git(t, r.worktree, "status", "--porcelain"); status != "?? wip.txt\n" {
		t.Errorf("host git status in the lane:\n%s", status)
	}
}

func TestOnlyTheLanesBranchMoves(t *testing.T) {
	r := newTestRepo(t)
	r.git(t, r.repo, "branch", "dirtywork/other")
	before := map[string]string{}
	for _, ref := range []string{"main", "dirtywork/other"} {
		before[ref] = r.git(t, r.repo, "rev-parse", ref)
	}
	readme := strings.TrimSpace(r.git(t, r.repo, "rev-parse", "HEAD:README.md"))
	cfg := r.config()
	cfg.AllowCommit = true
	w := open(t, cfg)
	// In its own repository the worker may do as it likes: move other
	// branches, tag, plant an object under a base blob's id.
	loose := filepath.Join(w.private.gitDir, "objects", readme[:2], readme[2:])
	out, code := run(t, w, "echo x > x && git add x && git commit -q -m x && "+
		"git update-ref refs/heads/main HEAD && git update-ref refs/heads/dirtywork/other HEAD && git tag -f evil HEAD && "+
		"mkdir -p "+filepath.Dir(loose)+" && python3 -c 'import zlib,sys; sys.stdout.buffer.write(zlib.compress(b\"blob 9\\0BACKDOOR\\n\"))' > "+loose)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	if _, err := w.Finalize(t.Context()); err != nil {
		t.Fatal(err)
	}
	for ref, want := range before {
		if got := r.git(t, r.repo, "rev-parse", ref); got != want {
			t.Errorf("%s moved from %s to %s", ref, want, got)
		}
	}
	if _, err := r.tryGit(r.repo, "rev-parse", "-q", "--verify", "refs/tags/evil"); err == nil {
		t.Error("the worker's tag reached the repository")
	}
	if got := r.git(t, r.repo, "cat-file", "blob", readme); got != "hello\n" {
		t.Errorf("the base blob now holds %q", got)
	}
	r.git(t, r.repo, "fsck", "--strict", "--no-dangling")
}

func TestImportRefusesATipOffTheBase(t *testing.T) {
	r := newTestRepo(t)
	cfg := r.config()
	cfg.AllowCommit = true
	w := open(t, cfg)
	// A branch rewritten to a root commit of the worker's making.
	out, code := run(t, w, "git checkout -q --orphan tmp && git commit -q -m root && git branch -f "+r.branch+" HEAD && git checkout -q "+r.branch)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	_, err := w.Finalize(t.Context())
	if err == nil || !strings.Contains(err.Error(), "does not descend from the base") {
		t.Fatalf("Finalize: %v, want the tip refused", err)
	}
	if got := strings.TrimSpace(r.git(t, r.repo, "rev-parse", r.branch)); got != r.base {
		t.Errorf("the branch moved to %s", got)
	}
	if entries, _ := os.ReadDir(r.runDir); len(entries) == 0 {
		t.Error("nothing in the run dir")
	}
}
