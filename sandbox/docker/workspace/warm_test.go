package workspace

import (
	"errors"
	"slices"
	"testing"
)

// WarmToolbox fills a missing toolbox volume as a run would, and a run
// after it finds the volume whole; a second warm does nothing; an image
// the daemon lacks is refused as a run would be.
func TestWarmToolboxFillsOnceAheadOfTheRuns(t *testing.T) {
	r := newFakeRun(t, map[string]string{"a.txt": "one\n"})
	v, err := toolboxVolumeOf(Toolbox{Data: fakeToolbox})
	if err != nil {
		t.Fatal(err)
	}
	if err := WarmToolbox(t.Context(), r.f.connect, r.cfg); err != nil {
		t.Fatal(err)
	}
	warmed := r.f.calls()
	if !before(warmed, "CreateContainer "+v.fillName(), "Upload "+v.fillName()+" "+toolboxDir) ||
		!before(warmed, "Upload "+v.fillName()+" "+toolboxDir, "RemoveContainer "+v.fillName()) {
		t.Fatalf("the warm did not fill the volume: %q", warmed)
	}
	if vol, err := r.f.InspectVolume(t.Context(), v.name); err != nil || vol.Labels[labelToolbox] != v.key {
		t.Fatalf("the toolbox volume after the warm: %+v, %v", vol, err)
	}
	if err := WarmToolbox(t.Context(), r.f.connect, r.cfg); err != nil {
		t.Fatal(err)
	}
	w := r.open(t)
	runBash(t, w, "true")
	if slices.Contains(r.f.calls()[len(warmed):], "CreateContainer "+v.fillName()) {
		t.Error("a second warm or the run filled the volume again")
	}
	if left := r.f.containerNames(); len(left) != 1 { // the run's own
		t.Errorf("containers: %q", left)
	}

	cfg := r.cfg
	cfg.Image = "no-such-image"
	if err := WarmToolbox(t.Context(), r.f.connect, cfg); !errors.Is(err, ErrImageMissing) {
		t.Fatalf("warm with a missing image: %v, want ErrImageMissing", err)
	}
	cfg = r.cfg
	cfg.Toolbox = nil
	if err := WarmToolbox(t.Context(), r.f.connect, cfg); !errors.Is(err, ErrNoToolbox) {
		t.Fatalf("warm with no tool server: %v, want ErrNoToolbox", err)
	}
}
