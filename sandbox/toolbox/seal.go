package toolbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/seal"
	"github.com/dirtywork/dirtywork/transcript"
)

// The requests that settle the tree for verify and the export (see
// package seal). Each kills every process the commands left first, and
// runs alone, like a command.
const (
	// kindSweep kills what the commands left and says how many survived.
	kindSweep = "sweep"
	// kindMark takes the seal's baseline time in the tree's file system.
	kindMark = "mark"
	// kindSeal seals the tree and keeps its manifest for verify.
	kindSeal = "seal"
	// kindVerify runs the verify command on the sealed tree in a fresh
	// session, then takes out what it made and reports what it changed.
	kindVerify = "verify"
)

// exclusive reports whether a request kind runs alone: a command, or one
// that kills every process the commands left.
func exclusive(kind string) bool {
	switch kind {
	case kindBash, kindSweep, kindSeal, kindVerify:
		return true
	}
	return false
}

type sweepArgs struct {
	// Rewalk starts a walk of the tree for the budget afterwards: the
	// client changed the tree (a seal, a verify) and the next command
	// takes the verdict.
	Rewalk bool `json:"rewalk"`
}

type sweepResult struct {
	// Survivors counts the processes still alive after SIGKILL.
	Survivors int `json:"survivors"`
}

type markArgs struct{}

type markResult struct {
	SinceNS int64 `json:"since_ns"`
}

type sealArgs struct {
	SinceNS int64 `json:"since_ns"`
	// Tracked are the base tree's paths: "<octal git mode> <path>" each,
	// NUL-terminated.
	Tracked       []byte `json:"tracked"`
	Exclude       []byte `json:"exclude"`
	KeepRootGit   bool   `json:"keep_root_git"`
	DropLongPaths bool   `json:"drop_long_paths"`
	// Drop takes repositories out too (the client quarantined them).
	Drop bool `json:"drop"`
}

// wireReport is seal.Report with every worker-chosen text as bytes.
type wireReport struct {
	Repositories [][]byte      `json:"repositories"`
	Special      [][]byte      `json:"special"`
	Links        []wireLink    `json:"links"`
	KeptLinks    []wireLink    `json:"kept_links"`
	Ignored      []wireIgnored `json:"ignored"`
	Modes        []wireMode    `json:"modes"`
	Long         [][]byte      `json:"long"`
	Omitted      int           `json:"omitted"`
}

type wireLink struct {
	Path   []byte `json:"path"`
	Target []byte `json:"target"`
}

type wireIgnored struct {
	Path    []byte `json:"path"`
	Entries int64  `json:"entries"`
	Bytes   int64  `json:"bytes"`
	By      string `json:"by"`
	Action  string `json:"action"`
}

type wireMode struct {
	Path   []byte `json:"path"`
	Mode   string `json:"mode"`
	Base   string `json:"base"`
	Change string `json:"change"`
}

type sealResult struct {
	Report wireReport `json:"report"`
	// Pending: repositories were found and not dropped; nothing changed.
	Pending bool `json:"pending"`
	// Hash names the sealed tree ("" while Pending).
	Hash string `json:"hash"`
	// Killed counts what the sweep before the seal killed.
	Killed int `json:"killed"`
}

type verifyArgs struct {
	Command   []byte `json:"command"`
	TimeoutMS int64  `json:"timeout_ms"`
	// Setup runs before the command, in the same fresh session (it makes
	// the session's git dir); its failure fails the request.
	Setup []byte `json:"setup"`
	// Dir is the fresh session's directory, made after Wipe emptied what
	// it names; its home and tmp hold HOME and TMPDIR.
	Dir []byte `json:"dir"`
	// Wipe are directories emptied first: the worker's /tmp and home.
	Wipe [][]byte `json:"wipe"`
	// Env are KEY=VALUE entries over the server's environment.
	Env [][]byte `json:"env"`
}

type verifyResult struct {
	Bash    bashResult `json:"bash"`
	Changed [][]byte   `json:"changed"`
	Removed [][]byte   `json:"removed"`
	Hash    string     `json:"hash"`
}

// sweep kills every process the commands left; survivors is what
// outlived SIGKILL.
func (s *server) sweep(ctx context.Context, a sweepArgs) (any, error) {
	n := s.killLeft()
	if bud := s.currentBudget(); bud != nil && a.Rewalk {
		bud.StartWalk(context.WithoutCancel(ctx), true)
	}
	return sweepResult{Survivors: n}, nil
}

// killLeft kills what the commands left when the server reaps its
// children (pid 1 of a sandbox); a plain server has nothing to kill.
func (s *server) killLeft() int {
	if s.reaper == nil {
		return 0
	}
	return killAdopted()
}

// errSurvivors: processes outlived the sweep; nothing the tree holds can
// be judged.
var errSurvivors = errors.New("processes survived SIGKILL")

func (s *server) mark(context.Context) (any, error) {
	since, err := seal.Mark(s.cfg.Root)
	if err != nil {
		return nil, err
	}
	return markResult{SinceNS: since.UnixNano()}, nil
}

func (s *server) prepareSeal(raw []byte) (job, error) {
	var a sealArgs
	if err := decodeStrict(raw, &a); err != nil {
		return nil, fmt.Errorf("decode arguments: %w", err)
	}
	tracked, err := parseTracked(a.Tracked)
	if err != nil {
		return nil, err
	}
	b := seal.Baseline{
		Since: time.Unix(0, a.SinceNS), Tracked: tracked, Exclude: a.Exclude,
		KeepRootGit: a.KeepRootGit, DropLongPaths: a.DropLongPaths,
	}
	return func(ctx context.Context) (any, error) {
		if n := s.killLeft(); n > 0 {
			return nil, fmt.Errorf("seal: %d %w", n, errSurvivors)
		}
		if bud := s.currentBudget(); bud != nil {
			_ = bud.Settle(ctx) // no walk may race the seal; its verdict is kept
		}
		report, m, err := seal.Seal(ctx, s.cfg.Root, b, a.Drop)
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		s.sealed = m
		s.mu.Unlock()
		r := sealResult{Report: wireReportOf(report), Pending: m == nil}
		if m != nil {
			r.Hash = m.Hash()
			if bud := s.currentBudget(); bud != nil {
				bud.StartWalk(context.WithoutCancel(ctx), true) // what it took out no longer counts
			}
		}
		return r, nil
	}, nil
}

// parseTracked reads sealArgs.Tracked.
func parseTracked(b []byte) (map[string]uint32, error) {
	out := map[string]uint32{}
	for len(b) > 0 {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			return nil, errors.New("tracked paths: an entry without its NUL")
		}
		entry := string(b[:i])
		b = b[i+1:]
		mode, p, ok := strings.Cut(entry, " ")
		m, err := strconv.ParseUint(mode, 8, 32)
		if !ok || err != nil || p == "" {
			return nil, fmt.Errorf("tracked paths: malformed entry %q", entry)
		}
		out[p] = uint32(m)
	}
	return out, nil
}

// TrackedList encodes a base tree's paths and git modes for Seal.
func TrackedList(paths map[string]uint32) []byte {
	var b bytes.Buffer
	for p, m := range paths {
		b.WriteString(strconv.FormatUint(uint64(m), 8))
		b.WriteByte(' ')
		b.WriteString(p)
		b.WriteByte(0)
	}
	return b.Bytes()
}

func (s *server) prepareVerify(raw []byte) (job, error) {
	var a verifyArgs
	if err := decodeStrict(raw, &a); err != nil {
		return nil, fmt.Errorf("decode arguments: %w", err)
	}
	if a.TimeoutMS <= 0 || a.TimeoutMS > maxCommandTimeout.Milliseconds() {
		return nil, fmt.Errorf("timeout of %d ms is not in (0, %v]", a.TimeoutMS, maxCommandTimeout)
	}
	if !filepath.IsAbs(string(a.Dir)) {
		return nil, fmt.Errorf("session directory %q is not absolute", a.Dir)
	}
	return func(ctx context.Context) (any, error) { return s.verify(ctx, a) }, nil
}

// verify runs a.Command on the sealed tree in a session the worker never
// touched: nothing of the commands left alive, the worker's /tmp and home
// emptied, a home, TMPDIR and git dir of its own. Afterwards nothing it
// started is left alive, what it made is taken out, and what it changed
// of the sealed tree is reported.
func (s *server) verify(ctx context.Context, a verifyArgs) (any, error) {
	s.mu.Lock()
	m := s.sealed
	s.mu.Unlock()
	if m == nil {
		return nil, errors.New("verify: the tree was not sealed")
	}
	if n := s.killLeft(); n > 0 {
		return nil, fmt.Errorf("verify: %d %w", n, errSurvivors)
	}
	if bud := s.currentBudget(); bud != nil {
		_ = bud.Settle(ctx) // the seal's walk must not race the command; its verdict is kept
	}
	for _, d := range a.Wipe {
		if err := emptySessionDir(string(d)); err != nil {
			return nil, fmt.Errorf("verify: empty %s: %w", d, err)
		}
	}
	removeIPC()
	dir := string(a.Dir)
	for _, d := range []string{dir, dir + "/home", dir + "/tmp"} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return nil, fmt.Errorf("verify: make the session: %w", err)
		}
	}
	env := overlayEnv(s.env, append([][]byte{[]byte("HOME=" + dir + "/home"), []byte("TMPDIR=" + dir + "/tmp")}, a.Env...))
	timeout := time.Duration(a.TimeoutMS) * time.Millisecond
	if len(a.Setup) > 0 {
		res, err := s.runBashEnv(ctx, string(a.Setup), timeout, env)
		if err != nil {
			return nil, err
		}
		if res.ExitCode != 0 {
			return nil, fmt.Errorf("verify: set up the session: exit %d: %s", res.ExitCode, res.Output)
		}
	}
	res, err := s.runBashEnv(ctx, string(a.Command), timeout, env)
	if err != nil {
		return nil, err
	}
	if n := s.killLeft(); n > 0 {
		return nil, fmt.Errorf("verify: %d %w", n, errSurvivors)
	}
	changes, err := m.Rollback(context.WithoutCancel(ctx), s.cfg.Root)
	if err != nil {
		return nil, err
	}
	if bud := s.currentBudget(); bud != nil {
		bud.StartWalk(context.WithoutCancel(ctx), true)
	}
	out := verifyResult{Bash: res, Hash: m.Hash(), Changed: [][]byte{}, Removed: [][]byte{}}
	for _, p := range changes.Changed {
		out.Changed = append(out.Changed, []byte(p))
	}
	for _, p := range changes.Removed {
		out.Removed = append(out.Removed, []byte(p))
	}
	return out, nil
}

// overlayEnv is env with each KEY=VALUE of over replacing its key.
func overlayEnv(env []string, over [][]byte) []string {
	out := make([]string, 0, len(env)+len(over))
	keys := map[string]bool{}
	for _, kv := range over {
		k, _, _ := strings.Cut(string(kv), "=")
		keys[k] = true
	}
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); !keys[k] {
			out = append(out, kv)
		}
	}
	for _, kv := range over {
		out = append(out, string(kv))
	}
	return out
}

// emptySessionDir removes everything in dir (not dir itself), nothing followed;
// directories made unreadable by their owner (the server) are opened up
// first. A dir that does not exist is empty.
func emptySessionDir(dir string) error {
	root, err := os.OpenRoot(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer func() { _ = root.Close() }() // a directory opened for reading
	f, err := root.Open(".")
	if err != nil {
		return err
	}
	names, err := f.Readdirnames(-1)
	_ = f.Close() // read only
	if err != nil {
		return err
	}
	var errs []error
	for _, n := range names {
		if err := root.RemoveAll(n); err != nil {
			_ = root.Chmod(n, 0o700)
			if err := removeOpenedUp(root, n); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// removeOpenedUp removes rel after giving its owner every right on the
// directories below it.
func removeOpenedUp(root *os.Root, rel string) error {
	if fi, err := root.Lstat(rel); err == nil && fi.IsDir() {
		_ = root.Chmod(rel, 0o700)
		if f, err := root.Open(rel); err == nil {
			names, _ := f.Readdirnames(-1)
			_ = f.Close() // read only
			for _, n := range names {
				_ = removeOpenedUp(root, rel+"/"+n)
			}
		}
	}
	return root.RemoveAll(rel)
}

func wireReportOf(r seal.Report) wireReport {
	w := wireReport{
		Repositories: bytesOf(r.Repositories), Special: bytesOf(r.Special), Long: bytesOf(r.Long),
		Links: []wireLink{}, KeptLinks: []wireLink{}, Ignored: []wireIgnored{}, Modes: []wireMode{}, Omitted: r.Omitted,
	}
	for _, l := range r.Links {
		w.Links = append(w.Links, wireLink{Path: []byte(l.Path), Target: []byte(l.Target)})
	}
	for _, l := range r.KeptLinks {
		w.KeptLinks = append(w.KeptLinks, wireLink{Path: []byte(l.Path), Target: []byte(l.Target)})
	}
	for _, i := range r.Ignored {
		w.Ignored = append(w.Ignored, wireIgnored{Path: []byte(i.Path), Entries: i.Entries, Bytes: i.Bytes, By: i.By, Action: i.Action})
	}
	for _, m := range r.Modes {
		w.Modes = append(w.Modes, wireMode{Path: []byte(m.Path), Mode: m.Mode, Base: m.Base, Change: m.Change})
	}
	return w
}

func reportOf(w wireReport) seal.Report {
	r := seal.Report{Repositories: stringsOf(w.Repositories), Special: stringsOf(w.Special), Long: stringsOf(w.Long), Omitted: w.Omitted}
	for _, l := range w.Links {
		r.Links = append(r.Links, seal.Link{Path: string(l.Path), Target: string(l.Target)})
	}
	for _, l := range w.KeptLinks {
		r.KeptLinks = append(r.KeptLinks, seal.Link{Path: string(l.Path), Target: string(l.Target)})
	}
	for _, i := range w.Ignored {
		r.Ignored = append(r.Ignored, transcript.IgnoredChange{Path: string(i.Path), Entries: i.Entries, Bytes: i.Bytes, By: i.By, Action: i.Action})
	}
	for _, m := range w.Modes {
		r.Modes = append(r.Modes, transcript.ModeChange{Path: string(m.Path), Mode: m.Mode, Base: m.Base, Change: m.Change})
	}
	return r
}

func bytesOf(l []string) [][]byte {
	out := make([][]byte, 0, len(l))
	for _, s := range l {
		out = append(out, []byte(s))
	}
	return out
}

func stringsOf(l [][]byte) []string {
	out := make([]string, 0, len(l))
	for _, b := range l {
		out = append(out, string(b))
	}
	return out
}

// Sweep kills every process the commands left in the sandbox; survivors
// is how many outlived SIGKILL (0 but for a process stuck in the kernel).
// With rewalk the server then walks the tree for its budget again (the
// caller changed the tree); the next Budget call takes the verdict.
func (c *Client) Sweep(ctx context.Context, rewalk bool) (survivors int, err error) {
	d, err := c.call(ctx, kindSweep, sweepArgs{Rewalk: rewalk}, c.opts.callTimeout)
	if err != nil {
		return 0, err
	}
	return d.sweep.Survivors, nil
}

// Mark takes a seal baseline time in the tree's file system, before the
// worker's first call: see seal.Mark.
func (c *Client) Mark(ctx context.Context) (time.Time, error) {
	d, err := c.call(ctx, kindMark, markArgs{}, c.opts.callTimeout)
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(0, d.mark.SinceNS), nil
}

// SealRequest is what Seal seals the tree against.
type SealRequest struct {
	Baseline seal.Baseline
	// Drop takes the repositories out too: the caller quarantined them.
	Drop bool
}

// SealReply is what a seal found and did; Hash is "" while Pending.
type SealReply struct {
	Report  seal.Report
	Pending bool
	Hash    string
}

// Seal kills every process the commands left (survivors fail it), then
// seals the tree (see seal.Seal); the server keeps the manifest for
// Verify. Its deadline is the command margin: a walk of a large tree.
func (c *Client) Seal(ctx context.Context, req SealRequest) (SealReply, error) {
	b := req.Baseline
	args := sealArgs{
		SinceNS: b.Since.UnixNano(), Tracked: TrackedList(b.Tracked), Exclude: b.Exclude,
		KeepRootGit: b.KeepRootGit, DropLongPaths: b.DropLongPaths, Drop: req.Drop,
	}
	d, err := c.call(ctx, kindSeal, args, sealTimeout)
	if err != nil {
		return SealReply{}, err
	}
	return SealReply{Report: reportOf(d.seal.Report), Pending: d.seal.Pending, Hash: d.seal.Hash}, nil
}

// sealTimeout bounds a seal or the check after verify: walks that read
// the whole tree.
const sealTimeout = 10 * time.Minute

// VerifyRequest is a verify command and its fresh session.
type VerifyRequest struct {
	Command string
	Timeout time.Duration
	// Setup runs first in the session (it makes the session's git dir).
	Setup string
	// Dir is the session's directory, made after Wipe emptied the
	// directories it names; Env are KEY=VALUE entries for the session.
	Dir  string
	Wipe []string
	Env  []string
}

// VerifyReply is what verify left.
type VerifyReply struct {
	sandbox.BashResult
	// Changed are the sealed tree's paths verify changed or removed;
	// Removed what it made, taken out. Hash names the sealed tree.
	Changed, Removed []string
	Hash             string
}

// Verify runs the command on the tree sealed last, in a fresh session
// (see server.verify). Its deadline is the timeout (twice: setup and
// command) plus the walks'.
func (c *Client) Verify(ctx context.Context, req VerifyRequest) (VerifyReply, error) {
	out := VerifyReply{BashResult: sandbox.BashResult{ExitCode: -1, Timeout: req.Timeout}}
	if req.Timeout < time.Millisecond {
		return out, fmt.Errorf("verify: %w: timeout %v is under a millisecond", ErrBadRequest, req.Timeout)
	}
	args := verifyArgs{Command: []byte(req.Command), TimeoutMS: req.Timeout.Milliseconds(), Setup: []byte(req.Setup), Dir: []byte(req.Dir)}
	for _, w := range req.Wipe {
		args.Wipe = append(args.Wipe, []byte(w))
	}
	for _, e := range req.Env {
		args.Env = append(args.Env, []byte(e))
	}
	d, err := c.call(ctx, kindVerify, args, 2*req.Timeout+c.opts.commandMargin+sealTimeout)
	if err != nil {
		return out, err
	}
	b := d.verify.Bash
	out.ExitCode, out.Output, out.Capped, out.TimedOut, out.LaunchError = b.ExitCode, string(b.Output), b.Capped, b.TimedOut, b.LaunchError
	out.Changed, out.Removed, out.Hash = stringsOf(d.verify.Changed), stringsOf(d.verify.Removed), d.verify.Hash
	return out, nil
}
