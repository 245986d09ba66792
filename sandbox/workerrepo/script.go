// Package workerrepo writes the shell script that makes a worker's private
// git repository inside a sandbox: an empty git dir borrowing the base
// commit's objects from a read-only store, the branch at the base commit,
// HEAD on it, and the index (and, when asked, the work tree) from the base
// tree. The docker container and the host jail run the same script, so the
// worker finds the same repository in both.
package workerrepo

import (
	"fmt"
	"regexp"
	"strings"
)

var (
	// commitID is a full object id: SHA-1 or SHA-256.
	commitID = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)
	// safeBranch is a branch name that needs no quoting and git accepts;
	// it is still quoted.
	safeBranch = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]*$`)
	// safePath is a path the script may name: absolute, no quote, no
	// newline.
	safePath = regexp.MustCompile(`^/[^'\n\x00]*$`)
	// bare is a word the shell takes as it is.
	bare = regexp.MustCompile(`^[A-Za-z0-9._/+@=-]+$`)
)

// Repo is where the worker's repository goes and what it starts from.
type Repo struct {
	// GitDir is the worker's git dir, made by the script (it may exist
	// empty); WorkTree is the tree it describes.
	GitDir, WorkTree string
	// BaseObjects is the object directory holding the base commit's
	// pack, which the git dir borrows through objects/info/alternates.
	BaseObjects string
	// Shallow is the shallow file to copy in ("" with history).
	Shallow string
	// Branch and Base are the branch to make and the commit it starts at.
	Branch, Base string
}

// Script is the shell script that makes r. With populate the base tree is
// also checked out into the work tree (in parallel: tens of thousands of
// files are system time); without, the work tree is kept as it is and only
// the index is made (a reset, a resumed run). No configuration but the
// repository's own is read.
func Script(r Repo, populate bool) (string, error) {
	if !commitID.MatchString(r.Base) {
		return "", fmt.Errorf("worker repository: base %q is not a full commit id", r.Base)
	}
	if !safeBranch.MatchString(r.Branch) || strings.Contains(r.Branch, "..") || strings.HasSuffix(r.Branch, ".lock") {
		return "", fmt.Errorf("worker repository: unusable branch name %q", r.Branch)
	}
	for _, p := range []string{r.GitDir, r.WorkTree, r.BaseObjects} {
		if !safePath.MatchString(p) {
			return "", fmt.Errorf("worker repository: unusable path %q", p)
		}
	}
	if r.Shallow != "" && !safePath.MatchString(r.Shallow) {
		return "", fmt.Errorf("worker repository: unusable path %q", r.Shallow)
	}
	format := ""
	if len(r.Base) == 64 {
		format = " --object-format=sha256"
	}
	q := func(s string) string {
		if bare.MatchString(s) {
			return s
		}
		return "'" + s + "'"
	}
	var b strings.Builder
	b.WriteString("set -e\n")
	b.WriteString("export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 GIT_DIR=" + q(r.GitDir) + " GIT_WORK_TREE=" + q(r.WorkTree) + "\n")
	// Every program a sandbox starts costs milliseconds (a jail's exec
	// more), so what the shell can do itself it does: git init makes
	// objects/info (mkdir only were it not there), and the shallow file is
	// copied line by line by the shell's builtins.
	b.WriteString("git init -q --template=" + format + "\n")
	b.WriteString("[ -d " + q(r.GitDir+"/objects/info") + " ] || mkdir -p " + q(r.GitDir+"/objects/info") + "\n")
	b.WriteString("printf '%s\\n' " + q(r.BaseObjects) + " >" + q(r.GitDir+"/objects/info/alternates") + "\n")
	if r.Shallow != "" {
		b.WriteString("while IFS= read -r l || [ -n \"$l\" ]; do printf '%s\\n' \"$l\"; done <" + q(r.Shallow) + " >" + q(r.GitDir+"/shallow") + "\n")
	}
	fmt.Fprintf(&b, "git update-ref 'refs/heads/%s' '%s'\n", r.Branch, r.Base)
	fmt.Fprintf(&b, "git symbolic-ref HEAD 'refs/heads/%s'\n", r.Branch)
	if populate {
		// Parallel checkout from a thousand files: each worker is a
		// program of its own, which a small tree does not repay.
		b.WriteString("git -c checkout.workers=0 -c checkout.thresholdForParallelism=1000 read-tree -u --reset HEAD\n")
	} else {
		b.WriteString("git read-tree HEAD\n")
	}
	return b.String(), nil
}
