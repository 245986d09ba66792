package tui

import (
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// readOnlyRefusal is the status line a read-only session gets for a key
// that would change something.
func (m Model) readOnlyRefusal() string {
	return "read-only session: " + m.opts.ReadOnly
}

// refuseReadOnly reports whether k is a key a read-only session may not
// use on the current screen, and if so says so on the status line. It is
// checked before the key reaches the screen, so no screen ever starts the
// action: the refusal does not rest on each screen remembering it.
func (m *Model) refuseReadOnly(k tea.KeyPressMsg) bool {
	if m.opts.ReadOnly == "" || m.capturing() {
		return false
	}
	var changing []key.Binding
	switch m.screen {
	case screenDashboard:
		d, r := &m.keys.Dashboard, &m.keys.Runs
		changing = []key.Binding{d.Launch, r.Stop, r.Editor}
	case screenReview:
		rv := &m.keys.Review
		changing = []key.Binding{rv.Accept, rv.Merge, rv.Reject, rv.RejectFeedback, rv.Resume, rv.Clean, rv.Stop, rv.Editor}
	}
	if len(changing) == 0 || !key.Matches(k, changing...) {
		return false
	}
	m.setStatus(m.readOnlyRefusal(), true)
	return true
}

// openEditor opens dir in the editor, unless this session may not.
func (m Model) openEditor(dir string) (tea.Model, tea.Cmd) {
	switch {
	case m.opts.ReadOnly != "":
		m.setStatus(m.readOnlyRefusal(), true)
		return m, nil
	case m.opts.NoEditor != "":
		m.setStatus(m.opts.NoEditor, true)
		return m, nil
	}
	return m, m.editorCmd(dir)
}
