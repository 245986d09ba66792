package gitops

import "strings"

// repoLocalEnv are the variables that point git at a particular repository,
// index or object store (git rev-parse --local-env-vars, plus the numbered
// GIT_CONFIG_KEY_/VALUE_ pairs that go with GIT_CONFIG_COUNT). Inherited from
// a caller that itself runs inside git (a hook, an alias), they would
// silently redirect our commands to the caller's repository, so they are
// always stripped.
var repoLocalEnv = map[string]bool{
	"GIT_ALTERNATE_OBJECT_DIRECTORIES": true,
	"GIT_CONFIG":                       true,
	"GIT_CONFIG_PARAMETERS":            true,
	"GIT_CONFIG_COUNT":                 true,
	"GIT_OBJECT_DIRECTORY":             true,
	"GIT_DIR":                          true,
	"GIT_WORK_TREE":                    true,
	"GIT_IMPLICIT_WORK_TREE":           true,
	"GIT_GRAFT_FILE":                   true,
	"GIT_INDEX_FILE":                   true,
	"GIT_NO_REPLACE_OBJECTS":           true,
	"GIT_REPLACE_REF_BASE":             true,
	"GIT_PREFIX":                       true,
	"GIT_INTERNAL_SUPER_PREFIX":        true,
	"GIT_SHALLOW_FILE":                 true,
	"GIT_COMMON_DIR":                   true,
	"GIT_NAMESPACE":                    true,
	"GIT_QUARANTINE_PATH":              true,
}

// baseEnv is set on every git command: never prompt (nobody is there to
// answer), take no optional locks (parallel lanes must not fight over
// index.lock for a mere status), and speak the C locale because we parse
// output and match stderr.
var baseEnv = []string{
	"GIT_TERMINAL_PROMPT=0",
	"GIT_OPTIONAL_LOCKS=0",
	"LC_ALL=C",
}

// mallocTopPad keeps glibc's malloc from handing the top of git's heap
// back to the kernel after every object: reading loose objects, git
// inflates each into a buffer it frees at once, and with the default
// 128 KiB pad the heap shrinks and grows again by a few pages an object.
// Packing the base commit of a repository of 200 loose objects spent
// 0.2 s in the kernel that way (837 brk calls); with a 4 MiB pad it
// takes a third of the time. An operator's own value is kept; a C
// library other than glibc ignores it.
const (
	mallocTopPad      = "MALLOC_TOP_PAD_"
	mallocTopPadBytes = "4194304"
)

// neutralEnv is added in config-neutral mode: no global or system config,
// no system attributes.
var neutralEnv = []string{
	"GIT_CONFIG_GLOBAL=/dev/null",
	"GIT_CONFIG_NOSYSTEM=1",
	"GIT_ATTR_NOSYSTEM=1",
}

// neutralConfig are the -c overrides of config-neutral mode. Command-line
// config beats every file, and git passes it on to the git processes it
// starts itself (worktree remove runs status in the worktree).
var neutralConfig = []string{
	"core.hooksPath=/dev/null",
	"core.fsmonitor=false",
	"core.untrackedCache=false",
	"core.attributesFile=/dev/null",
	"core.excludesFile=/dev/null",
}

// buildEnv derives a git command's environment from the inherited one.
// Plain mode keeps the caller's git settings (identity, global config) and
// strips only what redirects git to another repository. Neutral mode keeps
// nothing of git's but the commit identity. GitDir/WorkTree pins are
// appended after stripping, so they always win.
func buildEnv(inherited []string, neutral bool, gitDir, workTree string) []string {
	env := make([]string, 0, len(inherited)+len(baseEnv)+len(neutralEnv)+3)
	padSet := false
	for _, kv := range inherited {
		name, _, _ := strings.Cut(kv, "=")
		if dropVar(name, neutral) {
			continue
		}
		padSet = padSet || name == mallocTopPad
		env = append(env, kv)
	}
	env = append(env, baseEnv...)
	if !padSet {
		env = append(env, mallocTopPad+"="+mallocTopPadBytes)
	}
	if neutral {
		env = append(env, neutralEnv...)
	}
	if gitDir != "" {
		env = append(env, "GIT_DIR="+gitDir)
	}
	if workTree != "" {
		env = append(env, "GIT_WORK_TREE="+workTree)
	}
	return env
}

// dropVar reports whether an inherited variable must not reach git.
func dropVar(name string, neutral bool) bool {
	if repoLocalEnv[name] || strings.HasPrefix(name, "GIT_CONFIG_KEY_") || strings.HasPrefix(name, "GIT_CONFIG_VALUE_") {
		return true
	}
	switch name {
	case "GIT_TERMINAL_PROMPT", "GIT_OPTIONAL_LOCKS", "LC_ALL":
		return true // set by baseEnv; no duplicates with diverging values
	}
	if !neutral || !strings.HasPrefix(name, "GIT_") {
		return false
	}
	// A commit made in neutral mode (a snapshot) still needs an identity,
	// and global config, where it usually lives, is switched off.
	return !strings.HasPrefix(name, "GIT_AUTHOR_") && !strings.HasPrefix(name, "GIT_COMMITTER_")
}
