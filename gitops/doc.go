// Package gitops drives git for dirtywork: a CLI runner with a deliberate
// environment (and a config-neutral mode for anything that touches content a
// worker wrote), repository resolution, lanes (a worktree plus a branch,
// bound to an owner id and recorded in a manifest in the common git dir), the
// repository lock that serializes lane operations across processes, and the
// repository conventions read from a commit's object store.
//
// gitops knows no runs and no containers: callers hand it a repository path
// and an owner id and get back paths, branches and commits.
package gitops
