package docker

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// gitInitTimeout bounds the in-container git init of a reset, which makes
// only the index (C-2's lifecycle limit); checkoutTimeout bounds the first
// one, which checks the tree out as well: a transfer of the whole tree,
// given C-2's limit for those.
const (
	gitInitTimeout  = 60 * time.Second
	checkoutTimeout = 300 * time.Second
)

var (
	// commitID is a full object id: SHA-1 or SHA-256.
	commitID = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)
	// safeBranch is a branch name that needs no quoting and git accepts;
	// it is still quoted.
	safeBranch = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]*$`)
)

// gitInitScript is the shell script that makes the worker's repository
// inside the container (S-19, with a pack instead of a bind-mounted object
// store): an empty git dir on the /gitdir tmpfs borrowing the base objects
// from the tools volume, the branch at the base commit, HEAD on it, and
// the index (and, when populate is set, the files of /work) from the base
// tree. A reset runs it without populate: /work survived, only the git dir
// is new. No configuration but the repository's own is read.
func gitInitScript(branch, base string, shallow, populate bool) (string, error) {
	if !commitID.MatchString(base) {
		return "", fmt.Errorf("in-container git init: base %q is not a full commit id", base)
	}
	if !safeBranch.MatchString(branch) || strings.Contains(branch, "..") || strings.HasSuffix(branch, ".lock") {
		return "", fmt.Errorf("in-container git init: unusable branch name %q", branch)
	}
	format := ""
	if len(base) == 64 {
		format = " --object-format=sha256"
	}
	var b strings.Builder
	b.WriteString("set -e\n")
	b.WriteString("export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 GIT_DIR=" + gitDir + " GIT_WORK_TREE=" + workDir + "\n")
	b.WriteString("git init -q --template=" + format + "\n")
	b.WriteString("mkdir -p " + gitDir + "/objects/info\n")
	b.WriteString("printf '%s\\n' " + baseObjects + " >" + gitDir + "/objects/info/alternates\n")
	if shallow {
		b.WriteString("cp " + shallowPath + " " + gitDir + "/shallow\n")
	}
	fmt.Fprintf(&b, "git update-ref 'refs/heads/%s' '%s'\n", branch, base)
	fmt.Fprintf(&b, "git symbolic-ref HEAD 'refs/heads/%s'\n", branch)
	if populate {
		// Parallel checkout: creating tens of thousands of files is
		// system time, which the container's CPUs share.
		b.WriteString("git -c checkout.workers=0 -c checkout.thresholdForParallelism=1 read-tree -u --reset HEAD\n")
	} else {
		b.WriteString("git read-tree HEAD\n")
	}
	return b.String(), nil
}
