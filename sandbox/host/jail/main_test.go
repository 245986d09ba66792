package jail

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	MaybeRun()
	os.Exit(m.Run())
}
