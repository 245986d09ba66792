package jail

import (
	"errors"
	"strings"
	"testing"
)

// TestMissingLayerRefusedOrReported: a kernel without Landlock is a
// refusal naming the layer and its fix, unless AllowUnconfined, which
// leaves it off and says so in Info. With it off, a write only Landlock
// stopped gets through: the layer does work of its own.
func TestMissingLayerRefusedOrReported(t *testing.T) {
	saved := kernelLandlockABI
	t.Cleanup(func() { kernelLandlockABI = saved })
	kernelLandlockABI = func() int { return 0 }

	_, err := Start(t.Context(), script("true"))
	var se *SetupError
	if !errors.As(err, &se) || se.Layer != LayerLandlock || !errors.Is(err, ErrSetup) || !strings.Contains(err.Error(), "fix:") {
		t.Fatalf("got %v, want a landlock SetupError with a fix", err)
	}
	probe := `echo 500 > /proc/self/oom_score_adj 2>/dev/null && echo wrote`
	r := bash(t, Config{AllowUnconfined: true}, probe)
	if r.info.Landlock.Enabled || len(r.info.Off) != 1 || !strings.HasPrefix(r.info.Off[0], LayerLandlock+": ") {
		t.Errorf("info with Landlock off: %+v", r.info)
	}
	if strings.TrimSpace(r.out) != "wrote" {
		t.Errorf("without Landlock the write failed too, so the test proves nothing: %s", describe(r))
	}
	kernelLandlockABI = saved
	if r := bash(t, Config{}, probe); strings.TrimSpace(r.out) != "" {
		t.Errorf("with Landlock the write got through: %s", describe(r))
	}
}

// TestProbe: on this machine every layer can be had (CI runs where the
// jail is whole), and the report names each.
func TestProbe(t *testing.T) {
	r := Probe(t.Context())
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{LayerUserNS, LayerRoot, LayerNetwork, LayerLandlock, LayerSeccomp, LayerPids, LayerMemory} {
		st, ok := r.Layer(name)
		if !ok || !st.OK || st.Detail == "" {
			t.Errorf("%s: %+v", name, st)
		}
	}
}
