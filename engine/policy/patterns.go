package policy

import (
	"regexp"
	"strings"
)

// The rules RE2 can express, as regular expressions over the ASCII-folded
// command (so they are written in lower case). The git rules and the
// redirect rule need look-ahead and live in scanners (git.go, redirect.go).

// toolchainHomeVars are the variables the bash environment carries with the
// operator's real toolchain directories in them (E-38). Unlike $HOME, which
// is the worktree, they point outside it.
var toolchainHomeVars = []string{"VOLTA_HOME", "RUSTUP_HOME", "CARGO_HOME", "NVM_DIR", "PYENV_ROOT"}

// escapeTarget matches the start of a path outside the worktree: any number
// of "./" and then "/", "~" or ".."; or a toolchain variable as $VAR or
// ${VAR. The "./" prefixes matter because the worktree rewrite turns
// "<root>/../x" into "./../x", which must still count as an escape.
var escapeTarget = `(?:(?:\./)*(?:/|~|\.\.)|\$\{?(?:` +
	strings.ToLower(strings.Join(toolchainHomeVars, "|")) + `)\b)`

var (
	// sudoRE is rule 1.
	sudoRE = regexp.MustCompile(`\bsudo\b`)

	// destructiveRE is rule 4: rm, mv, chmod or chown, then in the same
	// segment (no ;, | or & in between) a whitespace-led, optionally quoted
	// argument that starts with an escape target.
	destructiveRE = regexp.MustCompile(`\b(?:rm|mv|chmod|chown)\b[^|;&]*` +
		spaceClass + `['"]?` + escapeTarget)

	// downloadToInterpreterRE is rule 5: curl or wget, then in the same
	// segment a pipe into a shell or an interpreter, allowing one word
	// (such as sudo or env) and an opening quote before it.
	downloadToInterpreterRE = regexp.MustCompile(`\b(?:curl|wget)\b[^|;&]*\|` +
		spaceClass + `*['"]?\w*` + spaceClass +
		`*(?:(?:ba|z|da)?sh|python[0-9.]*|node|ruby|perl)\b`)

	// systemControlRE is rule 6.
	systemControlRE = regexp.MustCompile(`\b(?:osascript|launchctl|shutdown|reboot|killall)\b`)

	// chdirRE is rule 8: cd or pushd, whitespace, an optional quote, then
	// an escape target.
	chdirRE = regexp.MustCompile(`\b(?:cd|pushd)` + spaceClass + `+['"]?` + escapeTarget)

	// escapeTargetPrefixRE tests whether a string starts with an escape
	// target (rule 7's scanner).
	escapeTargetPrefixRE = regexp.MustCompile(`^` + escapeTarget)

	// gitSharedStateRE is rule 3 except config, tested at the start of a
	// git subcommand.
	gitSharedStateRE = regexp.MustCompile(`^(?:` +
		`remote` + spaceClass + `+(?:add|set-url|remove|rm|rename)\b` +
		`|(?:update-ref|gc|filter-branch)\b` +
		`|reflog` + spaceClass + `+(?:expire|delete)\b` +
		`|worktree` + spaceClass + `+(?:add|remove|prune|move)\b` +
		`|branch` + spaceClass + `+(?:-[dm]\b|--(?:delete|move)\b)` +
		`|tag` + spaceClass + `+(?:-d\b|--delete\b)` +
		`)`)
)
