// Package intent carries what a screen's key asks of mission control's root
// (close me, submit this form, open that transcript) back to the root within
// the same update.
//
// A screen could return such a request as a command, but a command's message
// is delivered after whatever keys are already queued: a user who presses
// ctrl+s and then L at once would type the L into the form being closed, and
// the keys after it would reach the dashboard, where s stops a run and x drops
// a queued launch. Taken synchronously, the request switches the screen before
// the next key is read.
package intent

import tea "charm.land/bubbletea/v2"

// Slot holds one pending request. Screens embed it.
type Slot struct{ msg tea.Msg }

// Ask records msg for the root, replacing an earlier one not yet taken.
func (s *Slot) Ask(msg tea.Msg) { s.msg = msg }

// Take returns the pending request, if any, and forgets it.
func (s *Slot) Take() tea.Msg {
	msg := s.msg
	s.msg = nil
	return msg
}
