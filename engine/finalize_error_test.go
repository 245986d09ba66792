package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/sandbox"
)

func TestFinalizeErrorNamesNoGoType(t *testing.T) {
	for err, want := range map[error]string{
		fmt.Errorf("list files: %w", errors.New("boom")):                           "FinalizeError: list files: boom",
		&sandbox.SandboxError{Op: "finalize", Err: errors.New("tool server gone")}: "SandboxError: finalize: tool server gone",
		fmt.Errorf("export: %w", context.DeadlineExceeded):                         "TimeoutError: export: context deadline exceeded",
	} {
		got := finalizeErrorText(err)
		if got != want || strings.Contains(got, "*") {
			t.Errorf("finalizeErrorText(%v) = %q, want %q", err, got, want)
		}
	}
}
