package main

import (
	"bytes"
	"runtime"
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/sandbox/toolbox/carried"
)

func TestVersionCommandPrintsBuildAndCarriedToolServers(t *testing.T) {
	t.Parallel()
	out, errOut, code := runMain(t, "version")
	if code != ExitOK {
		t.Fatalf("version exited %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("version printed %d lines, want 3:\n%s", len(lines), out)
	}
	if want := "dirtywork " + Version(); lines[0] != want {
		t.Errorf("line 1 = %q, want %q", lines[0], want)
	}
	if want := runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH; lines[1] != want {
		t.Errorf("line 2 = %q, want %q", lines[1], want)
	}
	// The test binary carries whatever the checkout's builds directory
	// held when it was compiled; the line must say exactly that.
	want := "carries no Linux tool servers"
	if arches := carried.Arches(); len(arches) > 0 {
		want = "carries Linux tool servers: " + strings.Join(arches, ", ")
	}
	if lines[2] != want {
		t.Errorf("line 3 = %q, want %q", lines[2], want)
	}
}

func TestVersionTakesNoArguments(t *testing.T) {
	t.Parallel()
	if _, _, code := runMain(t, "version", "extra"); code != ExitUsage {
		t.Fatalf("version extra exited %d, want %d", code, ExitUsage)
	}
}

func TestWriteVersionNamesEachCarriedArchitecture(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		arches []string
		want   string
	}{
		{nil, "dirtywork v1.2.3\ngo1.26.0 darwin/arm64\ncarries no Linux tool servers\n"},
		{[]string{"arm64"}, "dirtywork v1.2.3\ngo1.26.0 darwin/arm64\ncarries Linux tool servers: arm64\n"},
		{[]string{"amd64", "arm64"}, "dirtywork v1.2.3\ngo1.26.0 darwin/arm64\ncarries Linux tool servers: amd64, arm64\n"},
	} {
		var b bytes.Buffer
		if err := writeVersion(&b, "v1.2.3", "go1.26.0", "darwin/arm64", tc.arches); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("arches %v: got %q, want %q", tc.arches, b.String(), tc.want)
		}
	}
}
