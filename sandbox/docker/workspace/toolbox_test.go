package workspace

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/dirtywork/dirtywork/sandbox/docker/daemon"
)

// platformEngine is a fake daemon holding images of the given platforms
// (reference → "os/arch").
func platformEngine(t *testing.T, platforms map[string]string) *fakeEngine {
	t.Helper()
	images := map[string]daemon.Image{}
	for ref, platform := range platforms {
		goos, arch, _ := strings.Cut(platform, "/")
		images[ref] = daemon.Image{ID: "sha256:" + strings.Repeat("0", 64), OS: goos, Arch: arch}
	}
	return newFakeEngine(t, images)
}

// carrier is a ToolboxSource that has builds for some architectures and
// records which it was asked for.
type carrier struct {
	mu     sync.Mutex
	asked  []string
	builds map[string]Toolbox
	err    error // returned for an architecture it has no build for, when set
}

func (c *carrier) source(goarch string) (Toolbox, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked = append(c.asked, goarch)
	if tb, ok := c.builds[goarch]; ok {
		return tb, nil
	}
	if c.err != nil {
		return Toolbox{}, c.err
	}
	return Toolbox{}, fmt.Errorf("%w: this build carries no linux/%s build", ErrNoToolbox, goarch)
}

func TestPreflightAsksForTheImageArchitecture(t *testing.T) {
	f := platformEngine(t, map[string]string{
		"worker:amd64":   "linux/amd64",
		"worker:arm64":   "linux/arm64",
		"worker:windows": "windows/amd64",
		"worker:noarch":  "linux/",
	})
	elf := []byte("\x7fELF carried amd64 build")
	launchFailed := errors.New("cannot find this program's binary")

	tests := []struct {
		name      string
		image     string
		builds    map[string]Toolbox
		sourceErr error
		noSource  bool
		wantAsked []string
		wantErr   error    // nil: preflight passes
		wantText  []string // in the error
	}{
		{
			name: "carried build for the image", image: "worker:amd64",
			builds:    map[string]Toolbox{"amd64": {Data: elf}},
			wantAsked: []string{"amd64"},
		},
		{
			name: "the running binary for the image", image: "worker:arm64",
			builds:    map[string]Toolbox{"arm64": {Path: "/usr/local/bin/dirtywork"}},
			wantAsked: []string{"arm64"},
		},
		{
			name: "no build for the image's architecture", image: "worker:arm64",
			builds:    map[string]Toolbox{"amd64": {Data: elf}},
			wantAsked: []string{"arm64"},
			wantErr:   ErrNoToolbox, wantText: []string{"worker:arm64", "linux/arm64"},
		},
		{
			name: "not a Linux image", image: "worker:windows",
			builds:  map[string]Toolbox{"amd64": {Data: elf}},
			wantErr: ErrNoToolbox, wantText: []string{"windows/amd64", "Linux only"},
		},
		{
			name: "no architecture reported", image: "worker:noarch",
			builds:  map[string]Toolbox{"amd64": {Data: elf}},
			wantErr: ErrNoToolbox, wantText: []string{"no architecture", "worker:noarch"},
		},
		{
			name: "no source", image: "worker:amd64", noSource: true,
			wantErr: ErrNoToolbox, wantText: []string{"linux/amd64"},
		},
		{
			name: "the source fails otherwise", image: "worker:amd64",
			sourceErr: launchFailed, wantAsked: []string{"amd64"},
			wantErr: launchFailed, wantText: []string{"worker:amd64", "linux/amd64"},
		},
		{
			name: "both a path and data", image: "worker:amd64",
			builds:    map[string]Toolbox{"amd64": {Path: "/bin/dirtywork", Data: elf}},
			wantAsked: []string{"amd64"},
			wantText:  []string{"both a path and data"},
		},
		{
			name: "neither a path nor data", image: "worker:amd64",
			builds:    map[string]Toolbox{"amd64": {Data: []byte{}}},
			wantAsked: []string{"amd64"},
			wantText:  []string{"neither a path nor data"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &carrier{builds: tt.builds, err: tt.sourceErr}
			cfg := Config{Image: tt.image, Toolbox: c.source}
			if tt.noSource {
				cfg.Toolbox = nil
			}
			err := Preflight(t.Context(), f.connect, cfg)
			if !slices.Equal(c.asked, tt.wantAsked) {
				t.Errorf("the source was asked for %q, want %q", c.asked, tt.wantAsked)
			}
			if tt.wantErr == nil && len(tt.wantText) == 0 {
				if err != nil {
					t.Fatalf("Preflight: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Preflight passed")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("Preflight: %v, want %v", err, tt.wantErr)
			}
			if !errors.Is(tt.wantErr, ErrNoToolbox) && errors.Is(err, ErrNoToolbox) {
				t.Errorf("Preflight: %v, should not be ErrNoToolbox", err)
			}
			for _, s := range tt.wantText {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("Preflight: %q does not say %q", err, s)
				}
			}
		})
	}
}

// Open refuses a config without a tool server source before it touches
// the daemon.
func TestOpenRefusesWithoutAToolboxSource(t *testing.T) {
	t.Parallel()
	connected := false
	_, err := Open(t.Context(), func() (daemon.Engine, error) { connected = true; return nil, errors.New("asked") },
		Config{Slug: "toolbox-test", Image: "worker:amd64"})
	if !errors.Is(err, ErrNoToolbox) || connected {
		t.Fatalf("Open: %v (connected %v), want ErrNoToolbox before connecting", err, connected)
	}
}

// A build travels as bytes: the toolbox volume gets exactly those, as a
// root-owned read-only executable.
func TestToolboxUploadCarriesTheBuild(t *testing.T) {
	build := append([]byte("\x7fELF\x02\x01\x01\x00"), bytes.Repeat([]byte{0, 0xff, '\n'}, 4096)...)
	var buf bytes.Buffer
	if err := writeUpload(&buf, toolboxEntries(build)); err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(&buf)
	found := false
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name != "dirtywork" {
			continue
		}
		found = true
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data, build) || h.Size != int64(len(build)) {
			t.Errorf("dirtywork member: %d bytes (header %d), not the %d bytes of the build", len(data), h.Size, len(build))
		}
		if h.Typeflag != tar.TypeReg || h.Mode != 0o555 || h.Uid != 0 || h.Gid != 0 {
			t.Errorf("dirtywork member: type %c mode %o uid %d gid %d, want a root-owned 0555 file",
				h.Typeflag, h.Mode, h.Uid, h.Gid)
		}
	}
	if !found {
		t.Fatal("no dirtywork member in the toolbox upload")
	}
}

// The toolbox volume is named by the build's content: the same bytes name
// the same volume whether read from a file or carried, other bytes
// another; the marker holds the whole hash.
func TestToolboxVolumeIsNamedByContent(t *testing.T) {
	build := []byte("\x7fELF one build")
	path := filepath.Join(t.TempDir(), "dirtywork")
	if err := os.WriteFile(path, build, 0o755); err != nil {
		t.Fatal(err)
	}
	fromFile, err := toolboxVolumeOf(Toolbox{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	carried, _ := toolboxVolumeOf(Toolbox{Data: build})
	other, _ := toolboxVolumeOf(Toolbox{Data: []byte("\x7fELF another build")})
	if fromFile != carried || fromFile.size != int64(len(build)) || len(fromFile.key) != 64 {
		t.Errorf("from a file %+v, carried %+v", fromFile, carried)
	}
	if other.name == carried.name || other.key == carried.key {
		t.Errorf("two builds share the volume %s", other.name)
	}
	if !strings.HasPrefix(carried.name, "dw-toolbox-") || !strings.HasPrefix(carried.key, strings.TrimPrefix(carried.name, "dw-toolbox-")) {
		t.Errorf("volume %s for key %s", carried.name, carried.key)
	}
	tr := tar.NewReader(bytes.NewReader(mustUpload(t, markerEntries(carried.key))))
	h, err := tr.Next()
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(tr)
	if h.Name != "complete" || h.Mode != 0o444 || h.Uid != 0 || string(data) != carried.key+"\n" {
		t.Errorf("marker %s mode %o uid %d holds %q", h.Name, h.Mode, h.Uid, data)
	}
}

// mustUpload is the archive of entries.
func mustUpload(t *testing.T, entries []uploadEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := writeUpload(&buf, entries); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
