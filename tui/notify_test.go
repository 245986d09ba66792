package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/transcript"
)

// TestOSC9NotificationCarriesTheSlugNeutralised: a run directory's name
// is not the worker's to choose, but anything that can write the runs
// root can make one; the desktop notification (OSC 9, which the terminal
// hands to the desktop) and the status line show it visibly, and nothing
// in it can end the OSC early or start another sequence.
func TestOSC9NotificationCarriesTheSlugNeutralised(t *testing.T) {
	const hostile = "fix-\x1b]52;c;cHduZWQ=\x07\x1b[2J\x9b31m\u202eevil\x7f\x1b\\end"
	h := newSample(t, 120, 40)
	r, ok := h.store.Run("fix-total-0101")
	if !ok {
		t.Fatal("the sample has no run fix-total-0101")
	}
	// A run the dashboard has not seen, already ended: it needs review.
	r.Slug = hostile
	r.Status, r.Alive, r.Ended = transcript.StatusCompleted, false, at(time.Now().Add(time.Hour))
	h.change(r)
	if len(h.raw) != 2 || h.raw[0] != "\a" {
		t.Fatalf("notifications = %q, want the bell and one OSC 9", h.raw)
	}
	osc := h.raw[1]
	payload, found := strings.CutPrefix(osc, "\x1b]9;")
	if !found {
		t.Fatalf("not an OSC 9: %q", osc)
	}
	// One terminator, at the end; nothing inside that a terminal acts on.
	body := strings.TrimSuffix(strings.TrimSuffix(payload, "\a"), "\x1b\\")
	if body == payload {
		t.Fatalf("OSC 9 %q has no terminator", osc)
	}
	for _, c := range body {
		if c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0) || c == '\u202e' {
			t.Errorf("OSC 9 payload carries %U raw: %q", c, body)
		}
	}
	if !strings.Contains(body, "fix-␛]52;c;cHduZWQ=") || !strings.Contains(body, "needs review") {
		t.Errorf("OSC 9 payload %q does not show the slug visibly", body)
	}
	for _, c := range h.m.status {
		if c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0) {
			t.Errorf("status line carries %U raw: %q", c, h.m.status)
		}
	}
}
