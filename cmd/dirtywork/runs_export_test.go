package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/engine/runs"
	"github.com/dirtywork/dirtywork/sandbox"
)

// TestRunsExportExitFollowsTheExport: R-6's exit code is the export's
// outcome; a later step that failed is a warning, never exit 2.
func TestRunsExportExitFollowsTheExport(t *testing.T) {
	t.Parallel()
	later := errors.New("exported, but run.json of 's' was not updated: disk full")
	for _, tc := range []struct {
		name     string
		ok       bool
		laterErr error
		code     int
		out      string
		errOut   []string
	}{
		{"done", true, nil, ExitOK, "exported 's' into /wt\n 1 file changed\n", nil},
		{"done, record not updated", true, later, ExitOK, "exported 's' into /wt\n", []string{"warning: exported, but run.json"}},
		{"failed", false, nil, ExitRunNotCompleted, "", []string{"export_failed: too big", "the volume was kept"}},
		{"failed, record not updated", false, later, ExitRunNotCompleted, "", []string{"warning: exported", "the volume was kept"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			res := &runs.ExportResult{Slug: "s", Worktree: "/wt", OK: tc.ok, Status: "export_failed: too big"}
			if tc.ok && tc.laterErr == nil {
				res.Fin = sandbox.Finalization{DiffStat: " 1 file changed"}
			}
			code, _, _ := exitCode(reportExport(&streams{out: &out, errOut: &errOut}, res, tc.laterErr))
			if code != tc.code || out.String() != tc.out {
				t.Fatalf("exit %d, stdout %q; want %d, %q", code, out.String(), tc.code, tc.out)
			}
			for _, w := range tc.errOut {
				if !strings.Contains(errOut.String(), w) {
					t.Errorf("stderr %q lacks %q", errOut.String(), w)
				}
			}
		})
	}
}
