package engine

import (
	"os"
	"testing"

	"github.com/dirtywork/dirtywork/sandbox/host"
	"github.com/dirtywork/dirtywork/sandbox/host/jail"
)

// TestMain lets the test binary serve as the launcher that confines
// host-mode bash, as the dirtywork binary does.
func TestMain(m *testing.M) {
	jail.MaybeRun()
	host.MaybeServe()
	os.Exit(m.Run())
}
