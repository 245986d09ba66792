package runs

import (
	"context"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/dirtywork/dirtywork/gitops"
)

// Risk is a change that makes tools run code later: whoever checks the
// branch out, builds it or pushes it may run what the worker wrote.
type Risk struct {
	Path string `json:"path"`
	// Kind is one of the Risk* constants.
	Kind string `json:"kind"`
	// Detail says what was found, worded for a reviewer.
	Detail string `json:"detail"`
}

// The kinds of Risk.
const (
	RiskAttributes = "gitattributes" // a .gitattributes naming filters or drivers
	RiskSubmodules = "gitmodules"    // .gitmodules (URLs git fetches, commands it may run)
	RiskHooks      = "hooks"         // hook-like paths: tools install and run them
	RiskCI         = "ci"            // CI workflows: run on push
	RiskExecutable = "executable"    // a new executable bit
	RiskEnv        = "environment"   // files shells and editors run on entering the tree
	RiskLink       = "link"          // a symbolic link whose target is absolute or leads out of the tree
	RiskUnread     = "unread"        // the changes could not be read for risks
)

// driverAttr matches attributes that hand content to a configured
// program: filter=, diff=, merge= (with a value: "-diff" only unsets).
var driverAttr = regexp.MustCompile(`(?:^|\s)(filter|diff|merge)=(\S+)`)

// hookDirs are directories whose files hook managers install as git hooks.
var hookDirs = []string{".githooks/", ".husky/", ".git-hooks/", "githooks/", ".hooks/"}

// hookFiles are files that configure or are hooks.
var hookFiles = map[string]bool{
	".pre-commit-config.yaml": true, ".pre-commit-hooks.yaml": true, "lefthook.yml": true, "lefthook.yaml": true,
	".lefthook.yml": true, ".lefthook.yaml": true, ".huskyrc": true, ".huskyrc.json": true, ".overcommit.yml": true,
}

// ciPrefixes and ciFiles are where CI systems read what to run.
var (
	ciPrefixes = []string{".github/workflows/", ".github/actions/", ".gitlab/", ".circleci/", ".buildkite/", ".woodpecker/", ".forgejo/workflows/", ".gitea/workflows/", ".azure-pipelines/"}
	ciFiles    = map[string]bool{
		".gitlab-ci.yml": true, ".travis.yml": true, "Jenkinsfile": true, "azure-pipelines.yml": true, ".drone.yml": true,
		"bitbucket-pipelines.yml": true, ".woodpecker.yml": true, "appveyor.yml": true, ".appveyor.yml": true, "cloudbuild.yaml": true,
	}
	envFiles = map[string]bool{".envrc": true, ".vscode/tasks.json": true, ".vscode/settings.json": true, ".devcontainer/devcontainer.json": true}
)

// Risks lists the changes among changes that make tools run code later.
// readBlob reads a new .gitattributes; nil skips the content check (every
// changed .gitattributes is then reported).
func Risks(changes []gitops.FileChange, readBlob func(sha string) ([]byte, error)) []Risk {
	var risks []Risk
	for _, c := range changes {
		if c.Status == "D" {
			continue
		}
		p := c.Path
		base := path.Base(p)
		switch {
		case base == ".gitattributes":
			if d := attributeDrivers(c, readBlob); d != "" {
				risks = append(risks, Risk{Path: p, Kind: RiskAttributes, Detail: "names " + d})
			}
		case p == ".gitmodules":
			risks = append(risks, Risk{Path: p, Kind: RiskSubmodules, Detail: "submodules: URLs and update commands git may fetch or run"})
		case hookLike(p):
			risks = append(risks, Risk{Path: p, Kind: RiskHooks, Detail: "a hook or hook manager's configuration"})
		case ciLike(p):
			risks = append(risks, Risk{Path: p, Kind: RiskCI, Detail: "a CI workflow: runs when pushed"})
		case envFiles[p]:
			risks = append(risks, Risk{Path: p, Kind: RiskEnv, Detail: "run by shells or editors on entering the tree"})
		}
		if c.NewMode == "120000" {
			if d := escapingLink(c, readBlob); d != "" {
				risks = append(risks, Risk{Path: p, Kind: RiskLink, Detail: d})
			}
		}
		if c.NewMode == "100755" && c.OldMode != "100755" {
			detail := "new executable file"
			if c.Status != "A" {
				detail = "made executable"
			}
			risks = append(risks, Risk{Path: p, Kind: RiskExecutable, Detail: detail})
		}
	}
	return risks
}

// escapingLink says why the link c brings is a risk: its target is
// absolute or climbs out of the tree (a tool that follows it reads or
// writes outside the checkout: a link into a docker volume's data dir,
// to /etc/passwd); "" for a link that stays inside.
func escapingLink(c gitops.FileChange, readBlob func(string) ([]byte, error)) string {
	if readBlob == nil {
		return "a symbolic link (target not read)"
	}
	data, err := readBlob(c.NewBlob)
	if err != nil {
		return "a symbolic link (target unreadable)"
	}
	target := string(data)
	joined := path.Join(path.Dir(c.Path), target)
	if !path.IsAbs(target) && joined != ".." && !strings.HasPrefix(joined, "../") {
		return ""
	}
	return "a symbolic link out of the repository, to " + strconv.Quote(target)
}

func attributeDrivers(c gitops.FileChange, readBlob func(string) ([]byte, error)) string {
	if readBlob == nil {
		return "attributes (content not read)"
	}
	data, err := readBlob(c.NewBlob)
	if err != nil {
		return "attributes (content unreadable)"
	}
	var found []string
	seen := map[string]bool{}
	for line := range strings.SplitSeq(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		for _, m := range driverAttr.FindAllStringSubmatch(line, -1) {
			d := m[1] + "=" + m[2]
			if !seen[d] {
				seen[d] = true
				found = append(found, d)
			}
		}
	}
	if len(found) == 0 {
		return ""
	}
	return "drivers " + strings.Join(found, ", ")
}

func hookLike(p string) bool {
	if hookFiles[p] || hookFiles[path.Base(p)] && !strings.Contains(p, "/") {
		return true
	}
	for _, d := range hookDirs {
		if strings.HasPrefix(p, d) {
			return true
		}
	}
	return strings.Contains(p, "/hooks/") && (strings.HasPrefix(p, ".") || strings.HasPrefix(p, "git"))
}

func ciLike(p string) bool {
	if ciFiles[p] {
		return true
	}
	for _, d := range ciPrefixes {
		if strings.HasPrefix(p, d) {
			return true
		}
	}
	return false
}

// blobReader reads blobs of repo for Risks.
func (s *Store) blobReader(ctx context.Context, repo string) func(string) ([]byte, error) {
	return func(sha string) ([]byte, error) { return s.git.CatBlob(ctx, repo, sha) }
}
