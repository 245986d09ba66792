//go:build docker

package workspace

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/dirtywork/dirtywork/sandbox/docker"
	"github.com/dirtywork/dirtywork/sandbox/toolbox/carried"
)

// carriedSource is a ToolboxSource over carried builds, recording which
// architectures it was asked for.
type carriedSource struct {
	dir   carried.Dir
	mu    sync.Mutex
	asked []string
}

func (c *carriedSource) toolbox(goarch string) (Toolbox, error) {
	c.mu.Lock()
	c.asked = append(c.asked, goarch)
	c.mu.Unlock()
	data, ok := c.dir.Binary(goarch)
	if !ok {
		return Toolbox{}, fmt.Errorf("%w: nothing carried for linux/%s", ErrNoToolbox, goarch)
	}
	return Toolbox{Data: data}, nil
}

func (c *carriedSource) askedFor() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.asked)
}

// A tool server that arrives as bytes, as a build dirtywork carries does,
// runs the container as one delivered from a path: TestMain's Linux build
// is read into memory and served through package carried, and the source
// is asked for the image's own architecture.
func TestLiveCarriedToolbox(t *testing.T) {
	cl := liveClient(t)
	img, err := cl.InspectImage(t.Context(), liveImage)
	if err != nil {
		t.Fatalf("inspect %s: %v", liveImage, err)
	}
	build, err := os.ReadFile(toolboxBinary)
	if err != nil {
		t.Fatal(err)
	}
	// Bytes of its own appended (the loader ignores them): the toolbox
	// volume is this build's, filled from the carried bytes.
	suffix := make([]byte, 16)
	_, _ = rand.Read(suffix)
	build = append(build, suffix...)
	v, err := toolboxVolumeOf(Toolbox{Data: build})
	if err != nil {
		t.Fatal(err)
	}
	removeToolboxAtEnd(t, v)
	src := &carriedSource{dir: carried.New(fstest.MapFS{"dirtywork-linux-" + img.Arch: {Data: build, Mode: 0o755}})}
	if _, ok := src.dir.Binary(img.Arch); !ok {
		t.Fatalf("package carried does not take the real linux/%s build", img.Arch)
	}

	slug := newSlug(t)
	r := newTestRepo(t, slug, map[string]string{"a.txt": "carried\n"})
	cfg := liveConfig(slug, r)
	cfg.Toolbox = src.toolbox

	if err := Preflight(t.Context(), docker.ConnectEngine, cfg); err != nil {
		t.Fatalf("Preflight: %v", err)
	}
	w := openLive(t, cfg)
	if got, want := src.askedFor(), []string{img.Arch, img.Arch}; !slices.Equal(got, want) {
		t.Errorf("preflight and open asked for %q, want %q (the image's architecture)", got, want)
	}

	sum := sha256.Sum256(build)
	if got := bash(t, w, "sha256sum "+toolboxPath+" | cut -d' ' -f1; stat -c '%a %u:%g' "+toolboxPath); got != hex.EncodeToString(sum[:])+"\n555 0:0" {
		t.Errorf("tool server in the container: %q, want the carried bytes, 555 root:root", got)
	}
	if got := bash(t, w, "cat a.txt"); got != "carried" {
		t.Errorf("bash cat a.txt = %q", got)
	}
	out, err := w.ReadFile(t.Context(), "a.txt", 0, 0)
	if err != nil || !strings.Contains(out, "carried") {
		t.Fatalf("read_file = %q, %v", out, err)
	}
}

// An image of an architecture nothing is carried for is refused before
// anything is created, naming the architecture.
func TestLiveCarriedToolboxMissing(t *testing.T) {
	cl := liveClient(t)
	img, err := cl.InspectImage(t.Context(), liveImage)
	if err != nil {
		t.Fatalf("inspect %s: %v", liveImage, err)
	}
	src := &carriedSource{dir: carried.New(fstest.MapFS{})}
	slug := newSlug(t)
	cfg := liveConfig(slug, newTestRepo(t, slug, map[string]string{"a.txt": "x\n"}))
	cfg.Toolbox = src.toolbox
	err = Preflight(t.Context(), docker.ConnectEngine, cfg)
	if !errors.Is(err, ErrNoToolbox) || !strings.Contains(err.Error(), "linux/"+img.Arch) {
		t.Fatalf("Preflight: %v, want ErrNoToolbox naming linux/%s", err, img.Arch)
	}
	if _, err := Open(t.Context(), docker.ConnectEngine, cfg); !errors.Is(err, ErrNoToolbox) {
		t.Fatalf("Open: %v, want ErrNoToolbox", err)
	}
	assertGone(t, cl, cfg, false)
}
