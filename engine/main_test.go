package engine

import (
	"os"
	"testing"

	"github.com/dirtywork/dirtywork/sandbox/host/confine"
)

// TestMain lets the test binary serve as the launcher that confines
// host-mode bash, as the dirtywork binary does.
func TestMain(m *testing.M) {
	confine.MaybeRun()
	os.Exit(m.Run())
}
