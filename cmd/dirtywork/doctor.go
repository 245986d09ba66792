package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dirtywork/dirtywork/engine/provider/anthropic"
	"github.com/dirtywork/dirtywork/engine/provider/openai"
	"github.com/dirtywork/dirtywork/engine/runs"
	"github.com/dirtywork/dirtywork/sandbox/docker"
	"github.com/dirtywork/dirtywork/sandbox/docker/workspace"
	"github.com/dirtywork/dirtywork/sandbox/host"
	"github.com/dirtywork/dirtywork/sandbox/host/jail"
	"github.com/dirtywork/dirtywork/transcript"
)

// Doctor check outcomes.
const (
	checkOK      = "ok"
	checkWarn    = "warn"
	checkFail    = "fail"
	checkSkipped = "skipped"
)

// ExitDoctorProblem is doctor's exit code when a check failed.
const ExitDoctorProblem = 1

// check is one thing doctor looked at.
type check struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	// Detail is what was found; Problem what is wrong, Fix what to do
	// about it (both "" when nothing is).
	Detail  string `json:"detail"`
	Problem string `json:"problem,omitempty"`
	Fix     string `json:"fix,omitempty"`
	// Data is the check's findings for machines (versions, models,
	// layers, orphans).
	Data any `json:"data,omitempty"`
}

// doctorReport is `doctor --json`'s object.
type doctorReport struct {
	OK     bool    `json:"ok"`
	Checks []check `json:"checks"`
}

// doctorTimeout bounds each check that talks to something.
const doctorTimeout = 10 * time.Second

// minGitMerge is the first git whose merge-tree --write-tree runs merge
// forecasts with.
var minGitMerge = [3]int{2, 38, 0}

func newDoctorCmd(io *streams) *cobra.Command {
	var asJSON bool
	var baseURL, model, image, providerName string
	cmd := &cobra.Command{
		Use:   "doctor [--json]",
		Short: "Check what dirtywork needs: git, docker and the worker image, the host sandbox, the model server, the runs",
		Long: `Checks, each with what it found and, for a problem, how to fix it:

  git            the git version (runs merge needs 2.38 or later)
  docker         the daemon dirtywork would use (which endpoint, from where) and its version
  image          the worker image (--image, default this version's)
  host sandbox   the host jail's layers on this kernel (Landlock, namespaces, limits); on
                 macOS, Seatbelt (/usr/bin/sandbox-exec)
  model server   the server at --base-url (as run resolves it for --provider) and the models
                 it serves; with --model (or DIRTYWORK_MODEL, or the config file), whether it
                 is loaded; for --provider anthropic, that ANTHROPIC_API_KEY is set and works
  runs           the runs root: a private directory of this user, and how many runs it holds
  orphans        what runs reconcile --dry-run finds: crashed runs and their leftovers

Exit 0 when nothing failed (warnings allowed), 1 when a check failed, 2 for a
usage error. --json prints {"ok", "checks": [{name, status (ok|warn|fail|skipped),
detail, problem, fix, data}]}; text written to a terminal is made safe to show.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			fs := c.Flags()
			fromConfig, err := applyDefaultsSkipping(fs, map[string]string{"base-url": "DIRTYWORK_BASE_URL", "model": "DIRTYWORK_MODEL"},
				configPath(), doctorIgnores(fs))
			if err != nil {
				return usageErrorf("%v", err)
			}
			switch providerName {
			case openai.Name, anthropic.Name:
			default:
				return usageErrorf("--provider must be openai or anthropic, got '%s'", providerName)
			}
			if !fs.Changed("base-url") && !fromConfig["base-url"] {
				baseURL = defaultBaseURL(providerName)
			}
			wantModel := ""
			if fs.Changed("model") || fromConfig["model"] {
				wantModel = model
			}
			rep := runDoctor(c.Context(), doctorInputs{provider: providerName, baseURL: baseURL, model: wantModel, image: image})
			if asJSON {
				if err := writeJSON(io.out, rep); err != nil {
					return err
				}
			} else if err := printDoctor(io.out, rep); err != nil {
				return fmt.Errorf("print the report: %w", err)
			}
			if !rep.OK {
				return silentExit(ExitDoctorProblem)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&asJSON, "json", false, "print the report as one JSON object")
	f.StringVar(&providerName, "provider", openai.Name, "model server protocol to check: openai or anthropic")
	f.StringVar(&baseURL, "base-url", "", "model server to check (env DIRTYWORK_BASE_URL; default as for run)")
	f.StringVar(&model, "model", defaultModel, "model that must be loaded (checked when given, or set by DIRTYWORK_MODEL or the config file)")
	f.StringVar(&image, "image", defaultImage(), "worker image to look for")
	return cmd
}

// doctorIgnores are the config file's keys doctor does not take: every
// run flag it has not.
func doctorIgnores(have *pflag.FlagSet) map[string]bool {
	var f runFlags
	all := pflag.NewFlagSet("run", pflag.ContinueOnError)
	f.register(all)
	ignore := map[string]bool{}
	all.VisitAll(func(fl *pflag.Flag) {
		if have.Lookup(fl.Name) == nil {
			ignore[fl.Name] = true
		}
	})
	return ignore
}

// doctorInputs are what the checks are about.
type doctorInputs struct {
	provider, baseURL, model, image string
}

// runDoctor runs every check.
func runDoctor(ctx context.Context, in doctorInputs) doctorReport {
	checks := []check{checkGit(ctx)}
	dockerCheck, cl := checkDocker(ctx)
	checks = append(checks, dockerCheck, checkImage(ctx, cl, in.image))
	if cl != nil {
		_ = cl.Close() // idle connections only
	}
	checks = append(checks, checkHostSandbox(ctx), checkModelServer(ctx, in.provider, in.baseURL, in.model))
	checks = append(checks, checkRuns(ctx)...)
	rep := doctorReport{OK: true, Checks: checks}
	for _, c := range checks {
		if c.Status == checkFail {
			rep.OK = false
		}
	}
	return rep
}

var gitVersionRE = regexp.MustCompile(`git version (\d+)\.(\d+)(?:\.(\d+))?`)

func checkGit(ctx context.Context) check {
	c := check{Name: "git"}
	path, err := exec.LookPath("git")
	if err != nil {
		c.Status, c.Problem, c.Fix = checkFail, "git is not installed (or not in PATH)", "install git 2.38 or later"
		return c
	}
	cctx, cancel := context.WithTimeout(ctx, doctorTimeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, path, "--version")
	cmd.Env = append(os.Environ(), "LC_ALL=C", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.Output()
	if err != nil {
		c.Status, c.Problem, c.Fix = checkFail, fmt.Sprintf("%s --version failed: %v", path, err), "reinstall git"
		return c
	}
	line := strings.TrimSpace(string(out))
	c.Detail = line
	m := gitVersionRE.FindStringSubmatch(line)
	if m == nil {
		c.Status, c.Problem = checkWarn, "cannot read the git version"
		return c
	}
	var v [3]int
	for i := range 3 {
		v[i], _ = strconv.Atoi(m[i+1])
	}
	c.Data = map[string]any{"path": path, "version": fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2])}
	if slices.Compare(v[:], minGitMerge[:]) < 0 {
		c.Status = checkWarn
		c.Problem = "git older than 2.38 has no merge-tree --write-tree: runs merge cannot forecast conflicts"
		c.Fix = "install git 2.38 or later"
		return c
	}
	c.Status = checkOK
	return c
}

// checkDocker finds the daemon as a docker run would and asks its version;
// the client is returned for the image check (nil when unusable).
func checkDocker(ctx context.Context) (check, *docker.Client) {
	c := check{Name: "docker"}
	fix := "start the Docker daemon (or point DOCKER_HOST at one that runs), or use --sandbox none (host mode)"
	ep, err := docker.DiscoverEndpoint(os.Getenv)
	if err != nil {
		c.Status, c.Problem, c.Fix = checkFail, err.Error(), fix
		return c, nil
	}
	c.Data = map[string]any{"endpoint": ep.Host, "source": ep.Source}
	cl, err := docker.NewClient(ep)
	if err != nil {
		c.Status, c.Problem, c.Fix = checkFail, err.Error(), fix
		return c, nil
	}
	cctx, cancel := context.WithTimeout(ctx, doctorTimeout)
	defer cancel()
	v, err := cl.ServerVersion(cctx)
	if err != nil {
		_ = cl.Close()
		c.Detail = ep.String()
		c.Status, c.Problem, c.Fix = checkFail, err.Error(), fix
		return c, nil
	}
	c.Status, c.Detail = checkOK, fmt.Sprintf("%s, engine %s", ep, v)
	c.Data = map[string]any{"endpoint": ep.Host, "source": ep.Source, "version": v}
	return c, cl
}

func checkImage(ctx context.Context, cl *docker.Client, image string) check {
	c := check{Name: "image", Detail: image}
	if cl == nil {
		c.Status, c.Detail = checkSkipped, image+": not checked, no docker daemon"
		return c
	}
	cctx, cancel := context.WithTimeout(ctx, doctorTimeout)
	defer cancel()
	id, _, err := cl.ImageExists(cctx, image)
	switch {
	case errors.Is(err, workspace.ErrImageMissing):
		c.Status, c.Problem = checkFail, fmt.Sprintf("the worker image %s is not there", image)
		c.Fix = imageMissingHint(image) + ", or use --sandbox none (host mode)"
	case err != nil:
		c.Status, c.Problem, c.Fix = checkFail, err.Error(), "check the daemon, then run doctor again"
	default:
		c.Status, c.Detail = checkOK, fmt.Sprintf("%s (%s)", image, shortID(id))
		c.Data = map[string]any{"image": image, "id": id}
	}
	return c
}

func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// checkHostSandbox reports host mode's confinement as a run would probe
// it: the jail's layers on Linux, Seatbelt on macOS.
func checkHostSandbox(ctx context.Context) check {
	cctx, cancel := context.WithTimeout(ctx, doctorTimeout)
	defer cancel()
	return hostSandboxCheck(host.ProbeJail(cctx, ""))
}

// hostSandboxCheck is the check of a probe's report: ok when every layer
// is there, a warning when only layers a run can do without are missing,
// a failure when an essential one is (the Linux jail's namespaces,
// Seatbelt's sandbox-exec), or when the report has no layer at all.
func hostSandboxCheck(rep jail.Report) check {
	c := check{Name: "host sandbox"}
	if len(rep.Layers) == 0 {
		c.Status = checkFail
		c.Problem = "the host sandbox's jail needs Linux"
		c.Fix = "use the docker sandbox; DIRTYWORK_ALLOW_UNCONFINED=1 runs host mode without any jail"
		return c
	}
	c.Data = rep
	var ok []string
	for _, l := range rep.Layers {
		if l.OK {
			ok = append(ok, l.Name+layerDetail(l.Detail))
		}
	}
	c.Detail = strings.Join(ok, ", ")
	err := rep.Err()
	var ue *jail.UnavailableError
	switch {
	case err == nil:
		c.Status = checkOK
	case errors.As(err, &ue):
		c.Status = checkWarn
		if ue.Essential() {
			c.Status = checkFail
		}
		var problems, fixes []string
		for _, l := range ue.Missing {
			problems = append(problems, l.Name+": "+l.Problem)
			if l.Fix != "" {
				fixes = append(fixes, l.Name+": "+l.Fix)
			}
		}
		c.Problem, c.Fix = strings.Join(problems, "; "), strings.Join(fixes, "; ")
	default:
		c.Status, c.Problem = checkFail, err.Error()
	}
	return c
}

func layerDetail(d string) string {
	if d == "" {
		return ""
	}
	return " (" + d + ")"
}

// checkModelServer lists the models of the server at baseURL, with the
// key run would send; model, when given, must be among them.
func checkModelServer(ctx context.Context, providerName, baseURL, model string) check {
	if providerName == anthropic.Name {
		return checkAnthropic(ctx, baseURL, model)
	}
	c := check{Name: "model server", Detail: baseURL}
	key, unsent, err := apiKeyFor(baseURL, configPath())
	if err != nil {
		c.Status, c.Problem, c.Fix = checkFail, err.Error(), "fix the config file"
		return c
	}
	cctx, cancel := context.WithTimeout(ctx, openai.PreflightTimeout)
	defer cancel()
	models, err := openai.New(openai.Config{BaseURL: baseURL, APIKey: key}).ListModels(cctx)
	if err != nil {
		c.Status, c.Problem = checkFail, err.Error()
		c.Fix = "start the model server (LM Studio: lms server start; Ollama: ollama serve) or point --base-url or DIRTYWORK_BASE_URL at it"
		if unsent != "" {
			c.Fix += fmt.Sprintf("; a server that wants a key gets %s, or the config file's [%s] key for its URL, never %s", apiKeyEnv, apiKeysTable, unsent)
		}
		return c
	}
	return listedModels(c, openai.Name, baseURL, model, models, "Load it with: lms load "+model)
}

// checkAnthropic checks the Anthropic API at baseURL: the key is set, and
// with it the API lists its models, model among them when given.
func checkAnthropic(ctx context.Context, baseURL, model string) check {
	c := check{Name: "model server", Detail: baseURL}
	key := os.Getenv(anthropic.KeyEnv)
	if key == "" {
		c.Status, c.Problem = checkFail, anthropic.KeyEnv+" is not set"
		c.Fix = "export " + anthropic.KeyEnv + " with an API key; dirtywork reads it in its own process and sends it to " + baseURL + " alone"
		return c
	}
	cctx, cancel := context.WithTimeout(ctx, anthropic.PreflightTimeout)
	defer cancel()
	models, err := anthropic.New(anthropic.Config{BaseURL: baseURL, APIKey: key}).ListModels(cctx)
	if err != nil {
		c.Status, c.Problem = checkFail, err.Error()
		c.Fix = "check that " + anthropic.KeyEnv + " holds a valid key and that " + baseURL + " is reachable (--base-url, DIRTYWORK_BASE_URL)"
		return c
	}
	return listedModels(c, anthropic.Name, baseURL, model, models, "pick one of the listed models with --model")
}

// listedModels finishes a model server check from the models it lists.
func listedModels(c check, providerName, baseURL, model string, models []string, fix string) check {
	c.Data = map[string]any{"provider": providerName, "base_url": baseURL, "models": models}
	c.Status = checkOK
	c.Detail = fmt.Sprintf("%s: %d model(s): %s", baseURL, len(models), strings.Join(models, ", "))
	if len(models) == 0 {
		c.Status, c.Problem, c.Fix = checkWarn, "the server serves no model", "load one (LM Studio: lms load <model>)"
	}
	if model != "" && !slices.Contains(models, model) {
		c.Status, c.Problem, c.Fix = checkFail, fmt.Sprintf("model '%s' is not loaded", model), fix
	}
	return c
}

// checkRuns looks at the runs root and at what crashed runs left.
func checkRuns(ctx context.Context) []check {
	root, err := transcript.RunsRoot()
	c := check{Name: "runs", Detail: root}
	orphans := check{Name: "orphans"}
	if err != nil {
		c.Status, c.Problem, c.Fix = checkFail, err.Error(), "set HOME or DIRTYWORK_HOME"
		orphans.Status, orphans.Detail = checkSkipped, "no runs root"
		return []check{c, orphans}
	}
	fi, err := os.Lstat(root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		c.Status, c.Detail = checkOK, root+": not made yet (the first run makes it)"
		orphans.Status, orphans.Detail = checkOK, "no runs"
		return []check{c, orphans}
	case err != nil:
		c.Status, c.Problem, c.Fix = checkFail, err.Error(), "make "+root+" readable by this user"
	case fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir():
		c.Status, c.Problem, c.Fix = checkFail, root+" is not a real directory", "move it away; the next run makes a new one"
	case ownerOf(fi) != os.Getuid():
		c.Status, c.Problem, c.Fix = checkFail, fmt.Sprintf("%s belongs to uid %d, not to you", root, ownerOf(fi)), "run dirtywork as its owner, or set DIRTYWORK_HOME"
	case fi.Mode().Perm()&0o077 != 0:
		c.Status, c.Problem = checkWarn, fmt.Sprintf("%s is mode %04o; the next run makes it 0700", root, fi.Mode().Perm())
	default:
		c.Status = checkOK
	}
	if c.Status == checkFail {
		orphans.Status, orphans.Detail = checkSkipped, "the runs root is unusable"
		return []check{c, orphans}
	}
	store := runs.Open(root)
	cctx, cancel := context.WithTimeout(ctx, 2*doctorTimeout)
	defer cancel()
	list, err := store.List(cctx, runs.ListOptions{Leftovers: true})
	if err != nil {
		c.Status, c.Problem = checkFail, err.Error()
		orphans.Status, orphans.Detail = checkSkipped, "the runs cannot be listed"
		return []check{c, orphans}
	}
	alive := 0
	for _, r := range list {
		if r.Alive {
			alive++
		}
	}
	c.Detail = fmt.Sprintf("%s: %d run(s), %d alive", root, len(list), alive)
	c.Data = map[string]any{"root": root, "runs": len(list), "alive": alive}
	rep, err := store.Reconcile(cctx, runs.ReconcileOptions{DryRun: true})
	if err != nil {
		orphans.Status, orphans.Problem = checkFail, "reconcile --dry-run: "+err.Error()
		return []check{c, orphans}
	}
	return []check{c, checkOrphans(rep)}
}

// checkOrphans is what a dry-run reconcile found: crashed runs and their
// leftovers, objects and directories no run accounts for.
func checkOrphans(rep *runs.ReconcileReport) check {
	c := check{Name: "orphans", Data: map[string]any{"orphans": rep.Orphans, "failed": rep.Failed}}
	if len(rep.Orphans) == 0 && len(rep.Failed) == 0 {
		c.Status, c.Detail = checkOK, "nothing left behind"
		return c
	}
	var clean, report []string
	for _, o := range rep.Orphans {
		item := o.Kind + " " + o.Name
		if o.Action == "report" {
			report = append(report, item)
		} else {
			clean = append(clean, item)
		}
	}
	c.Status = checkWarn
	var parts []string
	if len(clean) > 0 {
		parts = append(parts, fmt.Sprintf("%d to clean up: %s", len(clean), strings.Join(clean, ", ")))
	}
	if len(report) > 0 {
		parts = append(parts, fmt.Sprintf("%d to look at: %s", len(report), strings.Join(report, ", ")))
	}
	c.Detail = strings.Join(parts, "; ")
	var fixes []string
	if len(clean) > 0 {
		c.Problem = "crashes left worktrees, branches, containers or volumes behind"
		fixes = append(fixes, "dirtywork runs reconcile (work is parked under refs/dirtywork/parked/<slug>, never deleted)")
	}
	if len(report) > 0 {
		if c.Problem == "" {
			c.Problem = "things no run accounts for"
		}
		fixes = append(fixes, "dirtywork runs reconcile --dry-run says what each of the others is and what to do with it")
	}
	if len(rep.Failed) > 0 {
		c.Problem = strings.TrimPrefix(c.Problem+"; could not look at: "+strings.Join(rep.Failed, "; "), "; ")
	}
	c.Fix = strings.Join(fixes, "; ")
	return c
}

func ownerOf(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

// printDoctor writes the report as text: one line per check, problem and
// fix indented below, worker- or server-given text made safe for a
// terminal.
func printDoctor(w io.Writer, rep doctorReport) error {
	safe := safeLine
	width := 0
	for _, c := range rep.Checks {
		width = max(width, len(c.Name))
	}
	var b strings.Builder
	for _, c := range rep.Checks {
		fmt.Fprintf(&b, "%-*s  %-7s  %s\n", width, c.Name, c.Status, safe(c.Detail))
		pad := strings.Repeat(" ", width+2+7+2)
		if c.Problem != "" {
			fmt.Fprintf(&b, "%sproblem: %s\n", pad, safe(c.Problem))
		}
		if c.Fix != "" {
			fmt.Fprintf(&b, "%sfix: %s\n", pad, safe(c.Fix))
		}
	}
	if rep.OK {
		b.WriteString("no problem found\n")
	} else {
		b.WriteString("problems found: see fix lines above\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
