package toolbox

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// Measurement is what a measure call found (see fsops.Measure): the tree's
// allocated bytes and entry count, its escaping symlinks, and the first
// cap it breached.
type Measurement struct {
	Bytes   int64
	Entries int64
	// EscapingSymlinks are root-relative paths, sorted; at most 1000 of
	// them (and 1 MiB), EscapingSymlinksTruncated telling when more were
	// found.
	EscapingSymlinks          []string
	EscapingSymlinksTruncated bool
	// Violation is fsops' text for the first breach, or "".
	Violation string
	// LongPaths are the files and links whose path is longer than
	// fsops.LongPath (at most 1000; measure only).
	LongPaths []string
}

// ServerInfo is what a server says about itself in answer to Hello.
type ServerInfo struct {
	Version int
	PID     int
	UID     int
	GID     int
	// Root is the path the server's tools know the tree by.
	Root string
	// Dumpable is the server's PR_GET_DUMPABLE; false when it hardened
	// itself as it must.
	Dumpable bool
}

// decoded is one reply, decoded and checked for the request it answers.
type decoded struct {
	id   uint64
	kind string // the request's kind
	// remote is set for an error reply; canceled for a "canceled" one.
	remote   *RemoteError
	canceled bool

	text    string
	bash    bashResult
	measure Measurement
	hello   ServerInfo
	sweep   sweepResult
	mark    markResult
	seal    sealResult
	verify  verifyResult
}

// decodeReply decodes a reply frame's body strictly; its id must be the
// one the frame was tagged with (frameID). kindOf names the kind
// of the request in flight under an id; a reply to any other id is a
// protocol violation, as are unknown fields, trailing data, a result and an
// error together or neither, an unknown error kind, and results that no
// honest server sends (see check).
func decodeReply(frameID uint64, body []byte, kindOf func(id uint64) (string, bool)) (decoded, error) {
	var env reply
	if err := decodeStrict(body, &env); err != nil {
		return decoded{}, fmt.Errorf("decode reply: %w", err)
	}
	if env.ID != frameID {
		return decoded{}, fmt.Errorf("reply %d framed as %d", env.ID, frameID)
	}
	if env.ID == 0 {
		if env.Error != nil {
			return decoded{}, fmt.Errorf("unattributed error reply: %s: %s", env.Error.Kind, env.Error.Message)
		}
		return decoded{}, errors.New("reply without an id")
	}
	kind, ok := kindOf(env.ID)
	if !ok {
		return decoded{}, fmt.Errorf("reply to request %d, which is not in flight", env.ID)
	}
	d := decoded{id: env.ID, kind: kind}
	hasResult := len(env.Result) > 0 && string(env.Result) != "null"
	switch {
	case hasResult && env.Error != nil:
		return decoded{}, fmt.Errorf("reply to %s %d holds both a result and an error", kind, env.ID)
	case !hasResult && env.Error == nil:
		return decoded{}, fmt.Errorf("reply to %s %d holds neither a result nor an error", kind, env.ID)
	case env.Error != nil:
		return d, d.setError(env.Error)
	}
	if err := d.setResult(env.Result); err != nil {
		return decoded{}, fmt.Errorf("%s reply %d: %w", kind, env.ID, err)
	}
	return d, nil
}

// setError records an error reply of a known kind.
func (d *decoded) setError(e *wireError) error {
	if e.Kind == errKindCanceled {
		d.canceled = true
		return nil
	}
	if kindSentinel(e.Kind) == nil {
		return fmt.Errorf("%s reply %d: unknown error kind %q", d.kind, d.id, e.Kind)
	}
	d.remote = &RemoteError{Op: d.kind, Kind: e.Kind, Message: e.Message}
	return nil
}

// setResult decodes the result of d's kind strictly and checks it.
func (d *decoded) setResult(raw []byte) error {
	switch d.kind {
	case kindReadFile, kindWriteFile, kindEditFile, kindInsertText, kindApplyEdits, kindListDir, kindGrep:
		var r textResult
		if err := decodeStrict(raw, &r); err != nil {
			return err
		}
		if r.Text == nil {
			return errors.New("no text")
		}
		d.text = string(r.Text)
	case kindBash:
		if err := decodeStrict(raw, &d.bash); err != nil {
			return err
		}
		return checkBash(&d.bash)
	case kindMeasure, kindBudget:
		var r measureResult
		if err := decodeStrict(raw, &r); err != nil {
			return err
		}
		m, err := checkMeasure(&r)
		d.measure = m
		return err
	case kindHello:
		var r helloResult
		if err := decodeStrict(raw, &r); err != nil {
			return err
		}
		if r.PID <= 0 || r.UID < 0 || r.GID < 0 || len(r.Root) == 0 {
			return fmt.Errorf("implausible hello: pid %d, uid %d, gid %d, root %q", r.PID, r.UID, r.GID, r.Root)
		}
		d.hello = ServerInfo{Version: r.Version, PID: r.PID, UID: r.UID, GID: r.GID, Root: string(r.Root), Dumpable: r.Dumpable}
	case kindShutdown:
		var r emptyResult
		return decodeStrict(raw, &r)
	case kindSweep:
		if err := decodeStrict(raw, &d.sweep); err != nil {
			return err
		}
		if d.sweep.Survivors < 0 {
			return fmt.Errorf("%d survivors", d.sweep.Survivors)
		}
	case kindMark:
		if err := decodeStrict(raw, &d.mark); err != nil {
			return err
		}
		if d.mark.SinceNS <= 0 {
			return fmt.Errorf("implausible baseline time %d", d.mark.SinceNS)
		}
	case kindSeal:
		if err := decodeStrict(raw, &d.seal); err != nil {
			return err
		}
		if d.seal.Pending == (d.seal.Hash != "") || d.seal.Pending && len(d.seal.Report.Repositories) == 0 {
			return errors.New("a seal both pending and done, or pending for nothing")
		}
		r := &d.seal.Report
		for _, n := range []int{len(r.Repositories), len(r.Special), len(r.Links), len(r.KeptLinks), len(r.Ignored), len(r.Modes), len(r.Long)} {
			if n > maxSealListed {
				return fmt.Errorf("a seal report listing %d entries, over %d", n, maxSealListed)
			}
		}
	case kindVerify:
		if err := decodeStrict(raw, &d.verify); err != nil {
			return err
		}
		if d.verify.Hash == "" {
			return errors.New("a verify without the tree it judged")
		}
		if len(d.verify.Changed) > maxSealListed || len(d.verify.Removed) > maxSealListed {
			return errors.New("a verify listing too many paths")
		}
		return checkBash(&d.verify.Bash)
	default:
		return fmt.Errorf("no result expected for %q", d.kind)
	}
	return nil
}

// maxSealListed bounds each list of a seal or verify reply (package seal
// lists at most 1000 of each).
const maxSealListed = 1000

// checkBash refuses a command result no honest server sends: output over
// what 1 MiB can decode to, or not valid UTF-8 (the server decodes it), an
// exit status out of range, output with a timeout or launch failure.
func checkBash(r *bashResult) error {
	switch {
	case r.ExitCode < -1 || r.ExitCode > 255:
		return fmt.Errorf("exit code %d out of range", r.ExitCode)
	case r.Leftover < 0:
		return fmt.Errorf("%d leftover processes", r.Leftover)
	case len(r.Output) > 3*maxOutput:
		// Each invalid byte decodes to U+FFFD, 3 bytes: the most 1 MiB
		// can become.
		return fmt.Errorf("output of %d bytes, over what %d bytes decode to", len(r.Output), maxOutput)
	case !utf8.Valid(r.Output):
		return errors.New("output is not valid UTF-8")
	case (r.TimedOut || r.LaunchError != "") && (r.ExitCode != -1 || len(r.Output) > 0 || r.Capped):
		return errors.New("a killed or unlaunched command with an exit status or output")
	case r.TimedOut && r.LaunchError != "":
		return errors.New("a command both timed out and failed to launch")
	case len(r.LaunchError) > maxPathBytes:
		return fmt.Errorf("launch error of %d bytes", len(r.LaunchError))
	}
	return nil
}

// checkMeasure refuses negative totals and an over-long list.
func checkMeasure(r *measureResult) (Measurement, error) {
	switch {
	case r.Bytes < 0 || r.Entries < 0:
		return Measurement{}, fmt.Errorf("negative totals: %d bytes, %d entries", r.Bytes, r.Entries)
	case len(r.EscapingSymlinks) > maxEscapingListed:
		return Measurement{}, fmt.Errorf("%d escaping symlinks listed, over %d", len(r.EscapingSymlinks), maxEscapingListed)
	case int64(len(r.EscapingSymlinks)) > r.Entries:
		return Measurement{}, fmt.Errorf("%d escaping symlinks among %d entries", len(r.EscapingSymlinks), r.Entries)
	case len(r.LongPaths) > maxEscapingListed:
		return Measurement{}, fmt.Errorf("%d long paths listed, over %d", len(r.LongPaths), maxEscapingListed)
	}
	m := Measurement{
		Bytes:                     r.Bytes,
		Entries:                   r.Entries,
		EscapingSymlinks:          make([]string, len(r.EscapingSymlinks)),
		EscapingSymlinksTruncated: r.EscapingTruncated,
		Violation:                 string(r.Violation),
	}
	for i, p := range r.EscapingSymlinks {
		m.EscapingSymlinks[i] = string(p)
	}
	for _, p := range r.LongPaths {
		m.LongPaths = append(m.LongPaths, string(p))
	}
	return m, nil
}
