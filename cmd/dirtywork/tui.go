package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/dirtywork/dirtywork/bench"
	"github.com/dirtywork/dirtywork/engine/runs"
	"github.com/dirtywork/dirtywork/transcript"
	"github.com/dirtywork/dirtywork/tui"
	"github.com/dirtywork/dirtywork/tui/backend"
	"github.com/dirtywork/dirtywork/tui/keys"
	"github.com/dirtywork/dirtywork/tui/launch"
	"github.com/dirtywork/dirtywork/tui/launcher"
	"github.com/dirtywork/dirtywork/tui/runsstore"
)

// tuiFlags are `dirtywork tui`'s flags; each overrides the config file's
// [tui] section.
type tuiFlags struct {
	maxParallel int
	repo        string
	model       string
	baseURL     string
	sandbox     string
	notify      string
	theme       string
	logPath     string
	bench       string
}

// benchNewest is --bench given without a file: the newest results file.
// (A file of that name is ./newest.)
const benchNewest = "newest"

func newTUICmd(io *streams) *cobra.Command {
	var f tuiFlags
	cmd := &cobra.Command{
		Use:   "tui",
		Short: "Mission control: launch, follow and review runs",
		Long: `Mission control for a person supervising parallel local workers: every run
under the runs root (also those other processes start), up to four live panes,
a launch form and queue (at most --max-parallel runs at once), live
transcripts, the diff review with its verdict keys, and review statistics.
Runs are started with 'dirtywork run --detach', so they outlive mission control.

The bench screen (B, or --bench to start on it) shows a results file of
'dirtywork bench' (the newest under <home>/bench, or FILE), live while its
sweep runs: pass rates with their intervals, every case, failure classes,
and each case's acceptance output and diff, with the verdict keys.

Settings come from the [tui] section of the config file (notifications,
max_parallel, theme, and [tui.keys] for any key binding); flags override it.
Press ? inside for every key.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts, err := tuiOptions(c, f)
			if err != nil {
				return err
			}
			if opts.BenchOpen, opts.Bench, err = benchTarget(c, f.bench, args, opts.BenchDir); err != nil {
				return err
			}
			return runTUI(c.Context(), io, opts)
		},
	}
	fs := cmd.Flags()
	fs.IntVar(&f.maxParallel, "max-parallel", 0, "most runs alive at once; further launches queue (default 4, or the config file's)")
	fs.StringVar(&f.repo, "repo", "", "the repository the launch form starts with (default: the current directory when it is a git repository)")
	fs.StringVar(&f.model, "model", "", "the model the launch form starts with (env DIRTYWORK_MODEL)")
	fs.StringVar(&f.baseURL, "base-url", "", "the model server launches use (env DIRTYWORK_BASE_URL)")
	fs.StringVar(&f.sandbox, "sandbox", "", "the sandbox the launch form starts with: docker or none")
	fs.StringVar(&f.notify, "notify", "", "how an ended run is announced: bell, osc9, both or none")
	fs.StringVar(&f.theme, "theme", "", "auto (ask the terminal), dark or light; NO_COLOR turns colour off")
	fs.StringVar(&f.logPath, "log", "", "append errors and events to this file (default <home>/tui.log)")
	fs.StringVar(&f.bench, "bench", "", "start on the bench screen of results file `FILE` (given alone: the newest under <home>/bench)")
	fs.Lookup("bench").NoOptDefVal = benchNewest
	return cmd
}

// benchTarget reads --bench [FILE]: whether to start on the bench screen,
// and the results file (made absolute) or "" for the newest in dir. The
// file may follow the flag as its own argument. A file that cannot be
// read, or no results file at all, is refused.
func benchTarget(c *cobra.Command, value string, args []string, dir string) (bool, string, error) {
	if !c.Flags().Changed("bench") {
		if len(args) > 0 {
			return false, "", usageErrorf("unexpected argument %q (a results file goes after --bench)", args[0])
		}
		return false, "", nil
	}
	switch {
	case value != benchNewest && value != "" && len(args) > 0:
		return false, "", usageErrorf("--bench takes one results file, got %q and %q", value, args[0])
	case value == benchNewest || value == "":
		value = ""
		if len(args) > 0 {
			value = args[0]
		}
	}
	if value == "" {
		newest, err := bench.NewestResults(dir)
		if err != nil {
			return false, "", withHint(fmt.Errorf("--bench: no results file in %s", dir),
				"run 'dirtywork bench' first, or name one: --bench FILE")
		}
		return true, newest, nil
	}
	path, err := filepath.Abs(value)
	if err != nil {
		return false, "", usageErrorf("--bench: %v", err)
	}
	// O_NONBLOCK: a FIFO must not hang the start; it is refused below.
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return false, "", usageErrorf("--bench: cannot read results file %s: %v", value, unwrapPath(err))
	}
	info, err := f.Stat()
	_ = f.Close() // only opened to prove it can be read
	if err != nil || !info.Mode().IsRegular() {
		return false, "", usageErrorf("--bench: %s is not a results file (not a regular file)", value)
	}
	return true, path, nil
}

// unwrapPath drops the path an *fs.PathError repeats.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// tuiConfig is the [tui] section of the config file.
type tuiConfig struct {
	Notifications any            `toml:"notifications"`
	MaxParallel   int            `toml:"max_parallel"`
	Theme         string         `toml:"theme"`
	Keys          map[string]any `toml:"keys"`
}

// loadTUIConfig reads the [tui] section; a missing file or section is
// fine, anything malformed is an error naming the file and setting.
func loadTUIConfig(path string) (tuiConfig, error) {
	var cfg tuiConfig
	if path == "" {
		return cfg, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return cfg, nil
	}
	if err != nil {
		return cfg, fmt.Errorf("read config file: %w", err)
	}
	var whole struct {
		TUI *toml.Primitive `toml:"tui"`
	}
	md, err := toml.Decode(string(data), &whole)
	if err != nil {
		var perr toml.ParseError
		if errors.As(err, &perr) {
			return cfg, fmt.Errorf("%s:%d: %s", path, perr.Position.Line, perr.Message)
		}
		return cfg, fmt.Errorf("%s: %w", path, err)
	}
	if whole.TUI == nil {
		return cfg, nil
	}
	if err := md.PrimitiveDecode(*whole.TUI, &cfg); err != nil {
		return cfg, fmt.Errorf("%s: [tui]: %w", path, err)
	}
	for _, k := range md.Undecoded() {
		if len(k) >= 2 && k[0] == "tui" && (len(k) < 3 || k[1] != "keys") {
			return cfg, fmt.Errorf("%s:%d: unknown setting 'tui.%s' (known: notifications, max_parallel, theme, keys)",
				path, keyLine(data, k[len(k)-1]), strings.Join(k[1:], "."))
		}
	}
	return cfg, nil
}

// keyOverrides reads [tui.keys]: binding name → a key or a list of keys.
func (c tuiConfig) keyOverrides() (map[string][]string, error) {
	out := map[string][]string{}
	for name, v := range c.Keys {
		switch x := v.(type) {
		case string:
			out[name] = []string{x}
		case []any:
			for _, e := range x {
				s, ok := e.(string)
				if !ok {
					return nil, fmt.Errorf("[tui.keys] %s: keys must be strings", name)
				}
				out[name] = append(out[name], s)
			}
		default:
			return nil, fmt.Errorf("[tui.keys] %s: give a key (\"a\") or a list of keys", name)
		}
	}
	return out, nil
}

// parseNotify reads bell, osc9, both or none (or a list of bell/osc9).
func parseNotify(v any) (tui.Notify, error) {
	var words []string
	switch x := v.(type) {
	case nil:
		return tui.Notify{Bell: true}, nil
	case string:
		words = []string{x}
	case []any:
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return tui.Notify{}, errors.New("notifications must be bell, osc9, both or none")
			}
			words = append(words, s)
		}
	default:
		return tui.Notify{}, errors.New("notifications must be bell, osc9, both or none")
	}
	var n tui.Notify
	for _, w := range words {
		switch strings.ToLower(strings.TrimSpace(w)) {
		case "bell":
			n.Bell = true
		case "osc9":
			n.OSC9 = true
		case "both":
			n.Bell, n.OSC9 = true, true
		case "none", "":
		default:
			return tui.Notify{}, fmt.Errorf("notifications: unknown %q (bell, osc9, both or none)", w)
		}
	}
	return n, nil
}

// tuiOptions builds mission control's options from the config file, the
// environment and the flags, in that order of weakness.
func tuiOptions(c *cobra.Command, f tuiFlags) (tui.Options, error) {
	path := configPath()
	cfg, err := loadTUIConfig(path)
	if err != nil {
		return tui.Options{}, usageErrorf("%v", err)
	}
	km := keys.Default()
	over, err := cfg.keyOverrides()
	if err == nil {
		err = km.Rebind(over)
	}
	if err != nil {
		return tui.Options{}, usageErrorf("%s: %v", path, err)
	}
	notifyVal := cfg.Notifications
	if f.notify != "" {
		notifyVal = f.notify
	}
	notify, err := parseNotify(notifyVal)
	if err != nil {
		return tui.Options{}, usageErrorf("%v", err)
	}
	maxPar := 4
	if cfg.MaxParallel != 0 {
		maxPar = cfg.MaxParallel
	}
	if fl := c.Flags().Lookup("max-parallel"); fl != nil && fl.Changed {
		maxPar = f.maxParallel
	}
	if maxPar < 1 {
		return tui.Options{}, usageErrorf("max parallel runs must be at least 1, got %d", maxPar)
	}
	theme := cfg.Theme
	if f.theme != "" {
		theme = f.theme
	}
	color := tui.ColorAuto
	switch strings.ToLower(theme) {
	case "", "auto":
	case "dark":
		color = tui.ColorDark
	case "light":
		color = tui.ColorLight
	default:
		return tui.Options{}, usageErrorf("theme must be auto, dark or light, got %q", theme)
	}
	if os.Getenv("NO_COLOR") != "" {
		color = tui.ColorNone
	}
	defaults := launch.Defaults{
		Repo:    f.repo,
		Model:   firstNonEmpty(f.model, os.Getenv("DIRTYWORK_MODEL"), defaultModel),
		BaseURL: firstNonEmpty(f.baseURL, os.Getenv("DIRTYWORK_BASE_URL"), defaultOpenAIBaseURL),
		Sandbox: firstNonEmpty(f.sandbox, "docker"),
	}
	if defaults.Sandbox != "docker" && defaults.Sandbox != "none" {
		return tui.Options{}, usageErrorf("--sandbox must be docker or none, got %q", defaults.Sandbox)
	}
	if defaults.Repo == "" {
		if wd, err := os.Getwd(); err == nil {
			if _, err := os.Stat(filepath.Join(wd, ".git")); err == nil {
				defaults.Repo = wd
			}
		}
	}
	root, err := transcript.EnsureRunsRoot()
	if err != nil {
		return tui.Options{}, usageErrorf("%v", err)
	}
	// The form remembers each repository's last model, sandbox and verify
	// command beside the runs root.
	defaults.Memory = launch.LoadMemory(filepath.Join(filepath.Dir(root), "launch.json"))
	logPath := f.logPath
	if logPath == "" {
		logPath = filepath.Join(filepath.Dir(root), "tui.log")
	}
	benchDir, err := transcript.BenchRoot()
	if err != nil {
		return tui.Options{}, usageErrorf("%v", err)
	}
	return tui.Options{
		Store:       runsstore.New(runs.Open(root)),
		Launcher:    &launcher.Launcher{APIKey: os.Getenv("DIRTYWORK_API_KEY")},
		Keys:        km,
		Color:       color,
		MaxParallel: maxPar,
		Notify:      notify,
		Launch:      defaults,
		Editor:      editorCommand(),
		Log:         fileLogger(logPath),
		BenchDir:    benchDir,
	}, nil
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// editorCommand is $VISUAL, else $EDITOR, split into words (vi when
// neither is set).
func editorCommand() []string {
	for _, v := range []string{"VISUAL", "EDITOR"} {
		if f := strings.Fields(os.Getenv(v)); len(f) > 0 {
			return f
		}
	}
	return []string{"vi"}
}

// fileLogger appends lines to path; it never fails the TUI (a log that
// cannot be written is skipped).
func fileLogger(path string) func(string, ...any) {
	var mu sync.Mutex
	return func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return
		}
		defer func() { _ = f.Close() }()
		fmt.Fprintf(f, "%s %s\n", time.Now().UTC().Format(time.RFC3339), fmt.Sprintf(format, args...))
	}
}

// runTUI runs mission control on the command's streams.
func runTUI(ctx context.Context, io *streams, opts tui.Options) error {
	if !isTerminal(io.out) {
		return withHint(errors.New("mission control needs a terminal on stdout"),
			"run it in a terminal; scripts use 'dirtywork run' and 'dirtywork runs'")
	}
	if err := tui.Run(ctx, opts, tui.RunOptions{In: io.in, Out: io.out}); err != nil {
		return fmt.Errorf("mission control: %w", err)
	}
	return nil
}

var _ backend.Store = (*runsstore.Store)(nil)
