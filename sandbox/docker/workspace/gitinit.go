package workspace

import (
	"fmt"
	"time"

	"github.com/dirtywork/dirtywork/sandbox/workerrepo"
)

// gitInitTimeout bounds the in-container git init of a reset, which makes
// only the index (C-2's lifecycle limit); checkoutTimeout bounds the first
// one, which checks the tree out as well: a transfer of the whole tree,
// given C-2's limit for those.
const (
	gitInitTimeout  = 60 * time.Second
	checkoutTimeout = 300 * time.Second
)

// gitInitScript is the shell script that makes the worker's repository
// inside the container (S-19, with a pack instead of a bind-mounted object
// store): see workerrepo.Script, with the git dir on the /gitdir tmpfs and
// the base objects in the tools volume. A reset runs it without populate:
// /work survived, only the git dir is new.
func gitInitScript(branch, base string, shallow, populate bool) (string, error) {
	return gitInitScriptAt(gitDir, branch, base, shallow, populate)
}

// gitInitScriptAt is gitInitScript for a git dir elsewhere: verify's own.
func gitInitScriptAt(dir, branch, base string, shallow, populate bool) (string, error) {
	r := workerrepo.Repo{GitDir: dir, WorkTree: workDir, BaseObjects: baseObjects, Branch: branch, Base: base}
	if shallow {
		r.Shallow = shallowPath
	}
	s, err := workerrepo.Script(r, populate)
	if err != nil {
		return "", fmt.Errorf("in-container git init: %w", err)
	}
	return s, nil
}
