package tui

import (
	"context"
	"io"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"

	"github.com/dirtywork/dirtywork/tui/backend"
	"github.com/dirtywork/dirtywork/tui/feed"
)

// lateFeed lets the model be built before the program whose Send the feed
// needs: the program is made from the model, then the feed from the
// program.
type lateFeed struct{ f *feed.Feed }

func (l *lateFeed) Follow(slug, path string) error { return l.f.Follow(slug, path) }
func (l *lateFeed) Unfollow(slug string)           { l.f.Unfollow(slug) }
func (l *lateFeed) Watch(ch <-chan []backend.Change) {
	l.f.Watch(ch)
}

// RunOptions are the terminal side of Run.
type RunOptions struct {
	In  io.Reader
	Out io.Writer
	// Env is the environment the program sees (nil: the process's).
	Env []string
}

// Run starts mission control and blocks until it quits or ctx ends.
func Run(ctx context.Context, opts Options, ro RunOptions) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var popts []tea.ProgramOption
	if ro.In != nil {
		popts = append(popts, tea.WithInput(ro.In))
	}
	if ro.Out != nil {
		popts = append(popts, tea.WithOutput(ro.Out))
	}
	if ro.Env != nil {
		popts = append(popts, tea.WithEnvironment(ro.Env))
	}
	_, err := NewProgram(ctx, opts, popts...).Run()
	if err != nil && ctx.Err() != nil {
		return nil
	}
	return err
}

// NewProgram builds mission control's program with popts (its terminal:
// input, output, environment, size), for a caller that runs it itself,
// such as one SSH session. ctx ends the program and what it started in
// the background (the runs root's watch, the transcripts followed).
func NewProgram(ctx context.Context, opts Options, popts ...tea.ProgramOption) *tea.Program {
	lf := &lateFeed{}
	if opts.Feed == nil {
		opts.Feed = lf
	}
	popts = append([]tea.ProgramOption{tea.WithContext(ctx)}, popts...)
	if opts.Color == ColorNone {
		popts = append(popts, tea.WithColorProfile(colorprofile.Ascii))
	}
	opts.Context = ctx
	p := tea.NewProgram(New(opts), popts...)
	lf.f = feed.New(ctx, p.Send)
	return p
}
