package engine

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/sandbox/docker/workspace"
)

// fakeCarried is a carried-builds lookup holding builds and recording what
// it was asked for.
type fakeCarried struct {
	builds map[string][]byte
	asked  []string
}

func (f *fakeCarried) binary(goarch string) ([]byte, bool) {
	f.asked = append(f.asked, goarch)
	data, ok := f.builds[goarch]
	return data, ok
}

func (f *fakeCarried) arches() []string {
	var arches []string
	for a := range f.builds {
		arches = append(arches, a)
	}
	slices.Sort(arches)
	return arches
}

func TestToolboxChooser(t *testing.T) {
	arm64 := []byte("\x7fELF arm64 build")
	amd64 := []byte("\x7fELF amd64 build")
	exeFailed := errors.New("readlink /proc/self/exe: no such file")

	tests := []struct {
		name         string
		host         string // goos/goarch
		exeErr       error
		builds       map[string][]byte
		image        string // goarch
		wantPath     bool
		wantData     []byte
		wantAsked    []string // of the carried lookup
		wantErr      error
		wantErrTexts []string
	}{
		{
			name: "linux host, image of its architecture: the running binary",
			host: "linux/amd64", builds: map[string][]byte{"amd64": amd64}, image: "amd64",
			wantPath: true,
		},
		{
			name: "linux host, image of another architecture: the carried build",
			host: "linux/amd64", builds: map[string][]byte{"arm64": arm64}, image: "arm64",
			wantData: arm64, wantAsked: []string{"arm64"},
		},
		{
			name: "macOS host, image of its architecture: still the carried build",
			host: "darwin/arm64", builds: map[string][]byte{"arm64": arm64, "amd64": amd64}, image: "arm64",
			wantData: arm64, wantAsked: []string{"arm64"},
		},
		{
			name: "macOS host, nothing carried for the image",
			host: "darwin/arm64", builds: map[string][]byte{"arm64": arm64}, image: "amd64",
			wantAsked: []string{"amd64"},
			wantErr:   workspace.ErrNoToolbox, wantErrTexts: []string{"darwin/arm64", "arm64 only"},
		},
		{
			name: "linux host carrying nothing, image of another architecture",
			host: "linux/amd64", image: "arm64",
			wantAsked: []string{"arm64"},
			wantErr:   workspace.ErrNoToolbox, wantErrTexts: []string{"linux/amd64", "carries no Linux builds"},
		},
		{
			name: "linux host that cannot find its own binary",
			host: "linux/amd64", exeErr: exeFailed, builds: map[string][]byte{"amd64": amd64}, image: "amd64",
			wantErr: exeFailed, wantErrTexts: []string{"tool server"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			goos, goarch, _ := strings.Cut(tt.host, "/")
			fc := &fakeCarried{builds: tt.builds}
			c := toolboxChooser{
				goos: goos, goarch: goarch,
				executable:    func() (string, error) { return "/opt/bin/dirtywork", tt.exeErr },
				carried:       fc.binary,
				carriedArches: fc.arches,
			}
			tb, err := c.toolbox(tt.image)
			if !slices.Equal(fc.asked, tt.wantAsked) {
				t.Errorf("carried builds asked for %q, want %q", fc.asked, tt.wantAsked)
			}
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("toolbox(%s): %v, want %v", tt.image, err, tt.wantErr)
				}
				if !errors.Is(tt.wantErr, workspace.ErrNoToolbox) && errors.Is(err, workspace.ErrNoToolbox) {
					t.Errorf("toolbox(%s): %v, should not be ErrNoToolbox", tt.image, err)
				}
				for _, s := range tt.wantErrTexts {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not say %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("toolbox(%s): %v", tt.image, err)
			}
			switch {
			case tt.wantPath && (tb.Path != "/opt/bin/dirtywork" || tb.Data != nil):
				t.Errorf("toolbox(%s) = %+v, want the running binary", tt.image, tb)
			case !tt.wantPath && (tb.Path != "" || !bytes.Equal(tb.Data, tt.wantData)):
				t.Errorf("toolbox(%s) = path %q, %d bytes; want the carried %d bytes", tt.image, tb.Path, len(tb.Data), len(tt.wantData))
			}
		})
	}
}

// The hint names a Taskfile task that exists, and the binary it makes.
func TestNoToolboxHintNamesRealTasks(t *testing.T) {
	taskfile, err := os.ReadFile("../Taskfile.yml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		goos, goarch string
		want         []string
	}{
		{"darwin", "arm64", []string{"task build:darwin", "bin/dirtywork-darwin-arm64"}},
		{"darwin", "amd64", []string{"task build:darwin", "bin/dirtywork-darwin-amd64"}},
		{"linux", "amd64", []string{"task build:carry build", "bin/dirtywork"}},
	}
	for _, tt := range tests {
		hint := noToolboxHint(tt.goos, tt.goarch)
		for _, s := range append(tt.want, "--sandbox none") {
			if !strings.Contains(hint, s) {
				t.Errorf("%s/%s hint %q does not say %q", tt.goos, tt.goarch, hint, s)
			}
		}
		for _, m := range regexp.MustCompile(`task ([a-z:]+)(?: ([a-z:]+))?`).FindAllStringSubmatch(hint, -1) {
			for _, task := range m[1:] {
				if task != "" && !regexp.MustCompile(`(?m)^  `+regexp.QuoteMeta(task)+`:$`).Match(taskfile) {
					t.Errorf("hint %q names task %s, which Taskfile.yml lacks", hint, task)
				}
			}
		}
	}
	wrapped := fmt.Errorf("tool server for image w (linux/riscv64): %w", workspace.ErrNoToolbox)
	if dockerHint(wrapped) == dockerHint(errors.New("other")) {
		t.Errorf("ErrNoToolbox gets the generic hint %q", dockerHint(wrapped))
	}
}
