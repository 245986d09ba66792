package host

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/dirtywork/dirtywork/gitops"
	"github.com/dirtywork/dirtywork/sandbox/toolbox"
)

// packTimeout bounds packing the worker's commits inside the jail.
const packTimeout = 120 * time.Second

// commitPack is the worker's new commits, packed inside the jail: an
// untrusted file, and the tip it claims.
type commitPack struct {
	path, tip string
}

// tipLine is the line the packing script prints with the branch's tip.
var tipLine = regexp.MustCompile(`(?m)^tip ([0-9a-f]{40}([0-9a-f]{24})?)$`)

// packCommits packs, inside the jail, the objects reachable from the
// worker's branch and not from the base into a file of the worker's git
// dir; nil when the branch is still at the base (or gone). The worker's
// own git does it, under the worker's configuration, in the jail: what it
// writes is checked by the import, not trusted.
func (w *Workspace) packCommits(ctx context.Context, c *toolbox.Client) (*commitPack, error) {
	branch := "refs/heads/" + strings.TrimPrefix(w.cfg.Branch, "refs/heads/")
	out := filepath.Join(w.private.gitDir, "dirtywork-commits.pack")
	script := fmt.Sprintf(`set -e
export GIT_DIR=%[1]s GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
tip=$(git rev-parse -q --verify '%[2]s^{commit}') || exit 0
[ "$tip" = '%[3]s' ] && exit 0
printf 'tip %%s\n' "$tip"
printf '%%s\n' "$tip" '^%[3]s' | git pack-objects --revs -q --stdout >'%[4]s'
`, shellQuote(w.private.gitDir), branch, w.startCommit, out)
	res, err := c.Bash(ctx, script, packTimeout)
	if err != nil {
		return nil, w.failed(ctx, "pack the worker's commits", err)
	}
	if res.ExitCode != 0 {
		return nil, fmt.Errorf("pack the worker's commits: exit %d (timed out %v): %s",
			res.ExitCode, res.TimedOut, truncate(res.Output+res.LaunchError, 500))
	}
	m := tipLine.FindStringSubmatch(res.Output)
	if m == nil {
		return nil, nil // no commit on top of the base
	}
	return &commitPack{path: out, tip: m[1]}, nil
}

// importCommits imports the packed commits into the host repository and
// moves the lane's branch from where the worker started to them.
func (w *Workspace) importCommits(ctx context.Context, p *commitPack) error {
	quarantine, err := os.MkdirTemp(w.cfg.RunDir, "import-")
	if err != nil {
		return fmt.Errorf("import the worker's commits: %w", err)
	}
	defer func() { _ = os.RemoveAll(quarantine) }()
	err = w.git.ImportCommits(ctx, gitops.Repo{Root: w.cfg.RepoRoot, CommonDir: w.commonDir}, gitops.Import{
		Pack: p.path, Tip: p.tip, Base: w.startCommit, Branch: w.cfg.Branch, Quarantine: quarantine,
	})
	if err != nil {
		return fmt.Errorf("import the worker's commits: %w", err)
	}
	return nil
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
