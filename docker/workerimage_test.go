package workerimage

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// instructions returns the Dockerfile's instructions (upper-cased keyword
// first), joining continued lines and dropping comments.
func instructions(dockerfile string) []string {
	var out []string
	var cur strings.Builder
	for line := range strings.SplitSeq(dockerfile, "\n") {
		trimmed := strings.TrimSpace(line)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if rest, ok := strings.CutSuffix(trimmed, `\`); ok {
			cur.WriteString(rest + " ")
			continue
		}
		cur.WriteString(trimmed)
		out = append(out, cur.String())
		cur.Reset()
	}
	return out
}

func TestDockerfile(t *testing.T) {
	ins := instructions(Dockerfile())
	if len(ins) == 0 {
		t.Fatal("the embedded Dockerfile is empty")
	}
	var keywords []string
	for _, in := range ins {
		keywords = append(keywords, strings.ToUpper(strings.Fields(in)[0]))
	}
	// The sandbox passes user, directory and command itself; it trusts no
	// image default for them.
	for _, banned := range []string{"ENTRYPOINT", "CMD", "WORKDIR"} {
		for _, k := range keywords {
			if k == banned {
				t.Errorf("the Dockerfile sets %s", banned)
			}
		}
	}
	if want := "ARG " + BaseArg + "=" + BaseImage; ins[0] != want {
		t.Errorf("first instruction %q, want %q", ins[0], want)
	}
	if want := "FROM ${" + BaseArg + "}"; ins[1] != want {
		t.Errorf("second instruction %q, want %q", ins[1], want)
	}
	if last := ins[len(ins)-1]; last != "USER 1000:1000" {
		t.Errorf("last instruction %q, want USER 1000:1000", last)
	}
	all := strings.Join(ins, "\n")
	for _, pkg := range []string{"bash", "coreutils", "findutils", "git", "golang-go", "python3", "nodejs", "npm", "ripgrep", "jq", "ca-certificates", "curl"} {
		if !regexp.MustCompile(`--no-install-recommends .*\b` + regexp.QuoteMeta(pkg) + `\b`).MatchString(all) {
			t.Errorf("package %s is not installed", pkg)
		}
	}
	for _, want := range []string{
		"rm -rf /var/lib/apt/lists/*",
		"groupadd --gid 1000 worker",
		"useradd --uid 1000 --gid 1000 --home-dir /home/worker --create-home",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("the Dockerfile does not run %q", want)
		}
	}
}

func TestBootstrapScript(t *testing.T) {
	script := BootstrapScript()
	if !strings.HasPrefix(script, "#!/usr/bin/env bash\n") {
		t.Error("bootstrap-base.sh does not start with a bash shebang")
	}
	for _, want := range []string{"debootstrap --variant=minbase", "unmount_inside", `[ "$(id -u)" -eq 0 ]`} {
		if !strings.Contains(script, want) {
			t.Errorf("bootstrap-base.sh lacks %q", want)
		}
	}
	// It must at least parse.
	cmd := exec.Command("bash", "-n")
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("bash -n bootstrap-base.sh: %v\n%s", err, out)
	}
}

func TestDefaultImage(t *testing.T) {
	for version, want := range map[string]string{
		"v1.2.3":                  "dirtywork-worker:v1.2.3",
		"dev":                     "dirtywork-worker:dev",
		"dev-8cb66de12345+dirty":  "dirtywork-worker:dev-8cb66de12345-dirty",
		"v1.2.3-4-gabc/feature x": "dirtywork-worker:v1.2.3-4-gabc-feature-x",
		".hidden":                 "dirtywork-worker:v.hidden",
		"":                        "dirtywork-worker:dev",
		strings.Repeat("a", 200):  "dirtywork-worker:" + strings.Repeat("a", 128),
	} {
		if got := DefaultImage(version); got != want {
			t.Errorf("DefaultImage(%q) = %q, want %q", version, got, want)
		}
	}
}

func TestRunningTheScriptWithoutArgumentsFails(t *testing.T) {
	cmd := exec.Command("bash", "-s")
	cmd.Stdin = strings.NewReader(BootstrapScript())
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "usage: bootstrap-base.sh TARGET") {
		t.Errorf("bootstrap-base.sh without a target: %v\n%s", err, out)
	}
}
