// Package launch is the launch form: repository (with path completion),
// task, model (listed from the server), sandbox, max turns and verify
// command. Submitting hands a LaunchSpec to the root, which queues it
// and starts it through the launcher when a slot is free.
//
// The form launches what it shows: completion is a key of its own (a
// unique match is filled in, an ambiguous one shows the candidates), tab
// only moves between fields, nothing is drawn as a grey tail that would
// not launch, and a model the server does not list is refused before
// the launch. Each repository's last model, sandbox and verify command
// are remembered (Memory).
package launch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textarea"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/dirtywork/dirtywork/transcript/termsafe"
	"github.com/dirtywork/dirtywork/tui/backend"
	"github.com/dirtywork/dirtywork/tui/fit"
	"github.com/dirtywork/dirtywork/tui/intent"
	"github.com/dirtywork/dirtywork/tui/keys"
	"github.com/dirtywork/dirtywork/tui/theme"
)

// Defaults fill a new form.
type Defaults struct {
	Repo      string
	Model     string
	BaseURL   string
	Sandbox   string
	MaxTurns  int
	Verify    string
	ExtraArgs []string
	// Memory fills in a repository's last model, sandbox and verify
	// command, and learns them at each launch (nil: none).
	Memory *Memory
}

// SubmitMsg hands a filled form to the root.
type SubmitMsg struct{ Spec backend.LaunchSpec }

// CancelMsg closes the form.
type CancelMsg struct{}

// ModelsMsg carries the server's models.
type ModelsMsg struct {
	Models []string
	Err    error
}

// CompletionsMsg carries directories matching a typed repo path.
type CompletionsMsg struct {
	Typed string
	Paths []string
}

// ModelsCmd lists the server's models off the UI loop.
func ModelsCmd(l backend.Launcher, baseURL string) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ms, err := l.Models(ctx, baseURL)
		return ModelsMsg{Models: ms, Err: err}
	}
}

// CompleteCmd lists the directories that complete typed (off the loop).
func CompleteCmd(typed string) tea.Cmd {
	return func() tea.Msg { return CompletionsMsg{Typed: typed, Paths: completeDirs(typed)} }
}

// completeDirs returns up to 50 directories whose path starts with typed
// (~ expanded back as typed).
func completeDirs(typed string) []string {
	if typed == "" {
		return nil
	}
	expanded := typed
	home, _ := os.UserHomeDir()
	if strings.HasPrefix(typed, "~/") && home != "" {
		expanded = filepath.Join(home, typed[2:])
		if strings.HasSuffix(typed, "/") {
			expanded += "/"
		}
	}
	dir, base := filepath.Split(expanded)
	if dir == "" {
		dir = "."
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), base) || (strings.HasPrefix(e.Name(), ".") && !strings.HasPrefix(base, ".")) {
			continue
		}
		p := filepath.Join(dir, e.Name()) + "/"
		if strings.HasPrefix(typed, "~/") && home != "" {
			p = "~/" + strings.TrimPrefix(p, home+"/")
		} else if !filepath.IsAbs(typed) && !strings.HasPrefix(typed, "./") && dir == "." {
			p = e.Name() + "/"
		}
		out = append(out, p)
		if len(out) == 50 {
			break
		}
	}
	return out
}

const (
	fieldRepo = iota
	fieldTask
	fieldModel
	fieldSandbox
	fieldMaxTurns
	fieldVerify
	fieldCount
)

var fieldNames = [fieldCount]string{"repo", "task", "model", "sandbox", "max turns", "verify"}

// Sandboxes are the choices of the sandbox field.
var Sandboxes = []string{"docker", "none"}

// Model is the launch form.
type Model struct {
	intent.Slot // a submit or a cancel, for the root

	styles *theme.Styles
	keys   *keys.Form

	repo, model, maxTurns, verify textinput.Model
	task                          textarea.Model
	sandbox                       int
	focus                         int

	models    []string
	modelsErr string
	baseURL   string
	extra     []string
	err       string
	refusal   []string

	memory *Memory
	// recalled is the repository whose remembered launch was filled in.
	recalled string
	// paths are the directories completing the repository as typed
	// (pathsFor); completing is set while a completion waits for them.
	paths      []string
	pathsFor   string
	completing bool
	// choices are the candidates of an ambiguous completion, shown under
	// the field choicesFor until the next key.
	choices    []string
	choicesFor int

	width, height int
}

// New returns a form filled with d.
func New(s *theme.Styles, k *keys.Form, d Defaults) Model {
	mk := func(placeholder, value string) textinput.Model {
		ti := textinput.New()
		ti.Prompt = ""
		ti.Placeholder = placeholder
		ti.SetValue(value)
		km := textinput.DefaultKeyMap()
		km.NextSuggestion.Unbind()
		km.PrevSuggestion.Unbind()
		ti.KeyMap = km
		ti.SetStyles(s.Input)
		return ti
	}
	m := Model{styles: s, keys: k, baseURL: d.BaseURL, extra: d.ExtraArgs, memory: d.Memory, choicesFor: -1}
	m.repo = mk("path to a git repository", d.Repo)
	m.model = mk("model id", d.Model)
	turns := d.MaxTurns
	if turns <= 0 {
		turns = 40
	}
	m.maxTurns = mk("40", strconv.Itoa(turns))
	m.verify = mk("command that must pass (optional)", d.Verify)
	m.task = textarea.New()
	m.task.SetStyles(s.Area)
	m.task.Placeholder = "what the worker should do"
	m.task.ShowLineNumbers = false
	m.task.SetHeight(3)
	m.task.CharLimit = 64000
	m.task.KeyMap.InsertNewline.SetKeys("ctrl+j", "alt+enter")
	m.sandbox = max(0, slices.Index(Sandboxes, d.Sandbox))
	m.recall()
	m.focusField(fieldTask)
	if d.Repo == "" {
		m.focusField(fieldRepo)
	}
	return m
}

// recall fills in the model, sandbox and verify command last launched in
// the repository the form names, once per repository.
func (m *Model) recall() {
	repo := normalizeRepo(m.repo.Value())
	if repo == "" || repo == m.recalled {
		return
	}
	m.recalled = repo
	r, ok := m.memory.Recall(repo)
	if !ok {
		return
	}
	if r.Model != "" {
		m.model.SetValue(r.Model)
		m.model.CursorEnd()
	}
	if i := slices.Index(Sandboxes, r.Sandbox); i >= 0 {
		m.sandbox = i
	}
	m.verify.SetValue(r.Verify)
}

// normalizeRepo is the repository path as a launch names it: ~ expanded,
// absolute, trailing slash dropped.
func normalizeRepo(repo string) string {
	repo = strings.TrimSpace(repo)
	if repo == "" {
		return ""
	}
	if strings.HasPrefix(repo, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			repo = filepath.Join(home, repo[2:])
		}
	}
	if abs, err := filepath.Abs(repo); err == nil {
		repo = abs
	}
	return repo
}

// SetRefusal shows a launch the launcher refused (the form reopens with
// the same values).
func (m *Model) SetRefusal(err error) {
	m.refusal = nil
	var r *backend.RefusedError
	if errors.As(err, &r) {
		m.refusal = append(m.refusal, "refused: "+termsafe.Line(r.Msg))
		if r.Hint != "" {
			m.refusal = append(m.refusal, "hint: "+termsafe.Line(r.Hint))
		}
		return
	}
	m.refusal = append(m.refusal, "launch failed: "+termsafe.Line(err.Error()))
}

// Fill sets the form's values from a spec (a refused launch).
func (m *Model) Fill(spec backend.LaunchSpec) {
	m.repo.SetValue(spec.Repo)
	m.task.SetValue(spec.Task)
	m.model.SetValue(spec.Model)
	m.maxTurns.SetValue(strconv.Itoa(spec.MaxTurns))
	m.verify.SetValue(spec.Verify)
	m.sandbox = max(0, slices.Index(Sandboxes, spec.Sandbox))
	if spec.BaseURL != "" {
		m.baseURL = spec.BaseURL
	}
	m.extra = spec.ExtraArgs
}

// SetSize sets the screen size; the form draws in a box within it.
func (m *Model) SetSize(w, h int) {
	m.width, m.height = w, h
	iw := m.inputWidth()
	for _, ti := range []*textinput.Model{&m.repo, &m.model, &m.maxTurns, &m.verify} {
		ti.SetWidth(iw)
	}
	m.task.SetWidth(iw)
}

func (m Model) boxWidth() int   { return max(30, min(m.width-2, 90)) }
func (m Model) inputWidth() int { return max(10, m.boxWidth()-4-14) }

// Focused is the focused field's name.
func (m Model) Focused() string { return fieldNames[m.focus] }

func (m *Model) focusField(i int) tea.Cmd {
	m.repo.Blur()
	m.model.Blur()
	m.maxTurns.Blur()
	m.verify.Blur()
	m.task.Blur()
	m.focus = (i + fieldCount) % fieldCount
	switch m.focus {
	case fieldRepo:
		return m.repo.Focus()
	case fieldTask:
		return m.task.Focus()
	case fieldModel:
		return m.model.Focus()
	case fieldMaxTurns:
		return m.maxTurns.Focus()
	case fieldVerify:
		return m.verify.Focus()
	}
	return nil
}

// Spec validates the form into a launch spec.
func (m Model) Spec() (backend.LaunchSpec, error) {
	repo := strings.TrimSpace(m.repo.Value())
	task := strings.TrimSpace(m.task.Value())
	turns, err := strconv.Atoi(strings.TrimSpace(m.maxTurns.Value()))
	switch {
	case repo == "":
		return backend.LaunchSpec{}, fmt.Errorf("the repository is required")
	case task == "":
		return backend.LaunchSpec{}, fmt.Errorf("the task is required")
	case err != nil || turns < 1:
		return backend.LaunchSpec{}, fmt.Errorf("max turns must be a whole number of at least 1")
	}
	model := strings.TrimSpace(m.model.Value())
	// Only when the server's list is known: without it the launch's own
	// preflight asks the server.
	if len(m.models) > 0 && !slices.Contains(m.models, model) {
		what := termsafe.Line(model) + " is not a model the server lists"
		if model == "" {
			what = "choose a model the server lists"
		}
		return backend.LaunchSpec{}, fmt.Errorf("%s (%s goes through them): %s", what, m.keys.Cycle.Help().Key, termsafe.Line(strings.Join(m.models, ", ")))
	}
	return backend.LaunchSpec{
		Repo: normalizeRepo(repo), Task: task, Model: model, BaseURL: m.baseURL,
		Sandbox: Sandboxes[m.sandbox], MaxTurns: turns, Verify: strings.TrimSpace(m.verify.Value()),
		ExtraArgs: m.extra,
	}, nil
}

// Update handles the form's messages.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	switch msg := msg.(type) {
	case ModelsMsg:
		if msg.Err != nil {
			m.modelsErr = termsafe.Line(msg.Err.Error())
			return m, nil
		}
		m.models = msg.Models
		m.modelsErr = ""
		if m.model.Value() == "" && len(msg.Models) > 0 {
			m.model.SetValue(msg.Models[0])
		}
		return m, nil
	case CompletionsMsg:
		if msg.Typed == m.repo.Value() {
			m.paths, m.pathsFor = msg.Paths, msg.Typed
			if m.completing {
				m.completing = false
				return m.completeRepo()
			}
		}
		return m, nil
	case tea.KeyPressMsg:
		return m.key(msg)
	}
	return m.forward(msg)
}

func (m Model) key(k tea.KeyPressMsg) (Model, tea.Cmd) {
	kb := m.keys
	m.choices, m.choicesFor = nil, -1 // a list answers one key
	switch {
	case key.Matches(k, kb.Cancel):
		m.Ask(CancelMsg{})
		return m, nil
	case key.Matches(k, kb.Submit):
		spec, err := m.Spec()
		if err != nil {
			m.err = err.Error()
			return m, nil
		}
		m.Ask(SubmitMsg{Spec: spec})
		return m, m.rememberCmd(spec)
	case key.Matches(k, kb.Complete):
		return m.complete()
	case key.Matches(k, kb.Next) && m.leaves(k, "down"):
		return m, m.moveTo(m.focus + 1)
	case key.Matches(k, kb.Prev) && m.leaves(k, "up"):
		return m, m.moveTo(m.focus - 1)
	case key.Matches(k, kb.Cycle):
		switch m.focus {
		case fieldSandbox:
			m.sandbox = (m.sandbox + 1) % len(Sandboxes)
		case fieldModel:
			if len(m.models) > 0 {
				i := slices.Index(m.models, m.model.Value())
				m.model.SetValue(m.models[(i+1)%len(m.models)])
				m.model.CursorEnd()
			}
		}
		return m, nil
	case m.focus == fieldSandbox && (k.String() == "space" || k.String() == "left" || k.String() == "right"):
		m.sandbox = (m.sandbox + 1) % len(Sandboxes)
		return m, nil
	}
	return m.forward(k)
}

// leaves reports whether k moves to another field: tab always does; an
// arrow in the task box only from its first line (up) or last (down).
func (m Model) leaves(k tea.KeyPressMsg, arrow string) bool {
	if k.String() != arrow || m.focus != fieldTask {
		return true
	}
	if arrow == "up" {
		return m.task.Line() == 0
	}
	return m.task.Line() >= m.task.LineCount()-1
}

// moveTo focuses field i; leaving the repository fills in what was
// launched there last.
func (m *Model) moveTo(i int) tea.Cmd {
	if m.focus == fieldRepo {
		m.recall()
	}
	return m.focusField(i)
}

// rememberCmd records the launch's model, sandbox and verify command for
// its repository, off the UI loop.
func (m Model) rememberCmd(spec backend.LaunchSpec) tea.Cmd {
	mem := m.memory
	if mem == nil {
		return nil
	}
	return func() tea.Msg {
		_ = mem.Remember(spec.Repo, Remembered{Model: spec.Model, Sandbox: spec.Sandbox, Verify: spec.Verify, At: time.Now().UTC()})
		return nil
	}
}

// complete completes the focused field: the repository from the
// directories that start with it, the model from the ones the server
// lists.
func (m Model) complete() (Model, tea.Cmd) {
	switch m.focus {
	case fieldRepo:
		if m.pathsFor != m.repo.Value() {
			// The listing for what is typed has not arrived: complete
			// when it does.
			m.completing = true
			return m, CompleteCmd(m.repo.Value())
		}
		return m.completeRepo()
	case fieldModel:
		typed := m.model.Value()
		var cands []string
		for _, id := range m.models {
			if strings.HasPrefix(strings.ToLower(id), strings.ToLower(typed)) {
				cands = append(cands, id)
			}
		}
		if len(cands) == 0 {
			for _, id := range m.models {
				if strings.Contains(strings.ToLower(id), strings.ToLower(typed)) {
					cands = append(cands, id)
				}
			}
		}
		if len(m.models) == 0 {
			m.err = "the server's models are not known: type the model id"
			return m, nil
		}
		m.fill(&m.model, fieldModel, typed, cands)
	}
	return m, nil
}

func (m Model) completeRepo() (Model, tea.Cmd) {
	typed := m.repo.Value()
	m.fill(&m.repo, fieldRepo, typed, m.paths)
	if v := m.repo.Value(); v != typed {
		return m, CompleteCmd(v)
	}
	return m, nil
}

// fill completes ti from cands: the one candidate, else as far as they
// agree, else (nothing to add) the candidates are listed.
func (m *Model) fill(ti *textinput.Model, field int, typed string, cands []string) {
	switch len(cands) {
	case 0:
		m.err = "nothing completes " + strconv.Quote(termsafe.Line(typed))
		return
	case 1:
		ti.SetValue(cands[0])
		ti.CursorEnd()
		return
	}
	if p := commonPrefix(cands); len(p) > len(typed) && strings.HasPrefix(p, typed) {
		ti.SetValue(p)
		ti.CursorEnd()
		return
	}
	m.choices, m.choicesFor = cands, field
}

// commonPrefix is the longest prefix every string shares (whole
// characters).
func commonPrefix(ss []string) string {
	p := ss[0]
	for _, s := range ss[1:] {
		for !strings.HasPrefix(s, p) {
			_, size := utf8.DecodeLastRuneInString(p)
			p = p[:len(p)-size]
		}
	}
	return p
}

// forward hands a message to the focused input.
func (m Model) forward(msg tea.Msg) (Model, tea.Cmd) {
	var cmd tea.Cmd
	if _, ok := msg.(tea.KeyPressMsg); ok {
		m.err = "" // an edit answers the error; a cursor blink does not
	}
	switch m.focus {
	case fieldRepo:
		before := m.repo.Value()
		m.repo, cmd = m.repo.Update(msg)
		if v := m.repo.Value(); v != before {
			return m, tea.Batch(cmd, CompleteCmd(v))
		}
	case fieldTask:
		m.task, cmd = m.task.Update(msg)
	case fieldModel:
		m.model, cmd = m.model.Update(msg)
	case fieldMaxTurns:
		m.maxTurns, cmd = m.maxTurns.Update(msg)
	case fieldVerify:
		m.verify, cmd = m.verify.Update(msg)
	}
	return m, cmd
}

// View draws the form centred in its area.
func (m Model) View() string {
	s := m.styles
	bw := m.boxWidth()
	inner := bw - s.Box.GetHorizontalFrameSize()
	label := func(i int) string {
		l := fit.Line(fieldNames[i], 11)
		if i == m.focus {
			return s.Key.Render(theme.GlyphCursor+" ") + s.Bold.Render(l)
		}
		return "  " + s.Muted.Render(l)
	}
	lines := []string{s.Title.Render("Launch a run"), ""}
	lines = append(lines, label(fieldRepo)+m.repo.View())
	lines = append(lines, m.choiceLines(fieldRepo)...)
	taskLines := strings.Split(m.task.View(), "\n")
	for i, l := range taskLines {
		if i == 0 {
			lines = append(lines, label(fieldTask)+l)
		} else {
			lines = append(lines, strings.Repeat(" ", 13)+l)
		}
	}
	lines = append(lines, label(fieldModel)+m.model.View())
	lines = append(lines, m.choiceLines(fieldModel)...)
	switch {
	case m.modelsErr != "":
		lines = append(lines, strings.Repeat(" ", 13)+s.Warn.Render("cannot list models: "+m.modelsErr))
	case len(m.models) > 0:
		lines = append(lines, strings.Repeat(" ", 13)+s.Muted.Render(fmt.Sprintf("%d served · %s next", len(m.models), m.keys.Cycle.Help().Key)))
	}
	sb := make([]string, len(Sandboxes))
	for i, name := range Sandboxes {
		shown := name
		if name == "none" {
			shown = "none (host)"
		}
		if i == m.sandbox {
			sb[i] = s.Selected.Render(" " + shown + " ")
		} else {
			sb[i] = s.Muted.Render(" " + shown + " ")
		}
	}
	lines = append(lines, label(fieldSandbox)+strings.Join(sb, " "))
	lines = append(lines, label(fieldMaxTurns)+m.maxTurns.View())
	lines = append(lines, label(fieldVerify)+m.verify.View())
	lines = append(lines, "")
	// Errors and refusals are wrapped, never cut: they say what to fix.
	for _, e := range append([]string{m.err}, m.refusal...) {
		if e == "" {
			continue
		}
		for _, l := range fit.Wrap(termsafe.Line(e), inner) {
			lines = append(lines, s.Error.Render(l))
		}
	}
	k := m.keys
	lines = append(lines, s.Muted.Render(fmt.Sprintf("%s launch · %s next field · %s complete · %s cancel",
		k.Submit.Help().Key, k.Next.Help().Key, k.Complete.Help().Key, k.Cancel.Help().Key)))
	for i := range lines {
		lines[i] = fit.Line(lines[i], inner)
	}
	box := s.Box.Width(bw).Render(strings.Join(lines, "\n"))
	return box
}

// maxChoices is how many candidates an ambiguous completion lists.
const maxChoices = 6

// choiceLines lists an ambiguous completion's candidates under field.
func (m Model) choiceLines(field int) []string {
	if m.choicesFor != field || len(m.choices) == 0 {
		return nil
	}
	pad := strings.Repeat(" ", 13)
	out := make([]string, 0, maxChoices+1)
	for i, c := range m.choices {
		if i == maxChoices {
			out = append(out, pad+m.styles.Muted.Render(fmt.Sprintf("%s %d more", theme.GlyphEllipsis, len(m.choices)-maxChoices)))
			break
		}
		out = append(out, pad+m.styles.Muted.Render(termsafe.Line(c)))
	}
	return out
}

// ShortHelp is the form's part of the help bar.
func (m Model) ShortHelp() []key.Binding {
	k := m.keys
	return []key.Binding{k.Submit, k.Next, k.Prev, k.Complete, k.Cycle, k.Cancel}
}

// FullHelp is the form's part of the full help.
func (m Model) FullHelp() [][]key.Binding { return [][]key.Binding{m.ShortHelp()} }

// Focus focuses the current field again (its cursor starts blinking).
func (m *Model) Focus() tea.Cmd { return m.focusField(m.focus) }
