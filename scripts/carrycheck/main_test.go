package main

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"
)

// fakeBuild is a Linux ELF header for mach followed by payload: enough for
// the builds directory to count it as a build of that architecture.
func fakeBuild(mach elf.Machine, payload string) []byte {
	hdr := make([]byte, 64)
	copy(hdr, elf.ELFMAG)
	hdr[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	hdr[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	hdr[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	binary.LittleEndian.PutUint16(hdr[16:], uint16(elf.ET_EXEC))
	binary.LittleEndian.PutUint16(hdr[18:], uint16(mach))
	return append(hdr, payload...)
}

func buildsDir() (fstest.MapFS, []byte, []byte) {
	amd := fakeBuild(elf.EM_X86_64, strings.Repeat("amd64 tool server ", 100))
	arm := fakeBuild(elf.EM_AARCH64, strings.Repeat("arm64 tool server ", 100))
	return fstest.MapFS{
		"dirtywork-linux-amd64": {Data: amd},
		"dirtywork-linux-arm64": {Data: arm},
		"README.md":             {Data: []byte("# builds\n")},
	}, amd, arm
}

func writeFile(t *testing.T, name string, parts ...[]byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, bytes.Join(parts, []byte("other code and data")), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRunPassesABinaryThatEmbedsEveryBuild(t *testing.T) {
	t.Parallel()
	dir, amd, arm := buildsDir()
	bin := writeFile(t, "dirtywork", []byte("head"), arm, amd, []byte("tail"))
	var out bytes.Buffer
	if err := run(&out, dir, []string{"amd64", "arm64"}, []string{bin}); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if want := bin + " (unknown format): carries Linux tool servers: amd64, arm64\n"; out.String() != want {
		t.Fatalf("printed %q, want %q", out.String(), want)
	}
}

func TestRunFailsABinaryThatMissesABuildOrHasAnAlteredOne(t *testing.T) {
	t.Parallel()
	dir, amd, arm := buildsDir()
	onlyAmd := writeFile(t, "only-amd64", []byte("head"), amd)
	// A build cut short (or any other build of the same architecture)
	// is not the one in the directory.
	truncated := writeFile(t, "truncated-arm64", amd, arm[:len(arm)-1])
	full := writeFile(t, "full", amd, arm)
	var out bytes.Buffer
	err := run(&out, dir, []string{"amd64", "arm64"}, []string{onlyAmd, truncated, full})
	if err == nil {
		t.Fatalf("run passed binaries that miss a build:\n%s", out.String())
	}
	for _, want := range []string{
		onlyAmd + " does not carry the Linux tool server for arm64",
		truncated + " does not carry the Linux tool server for arm64",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), full+" ") {
		t.Errorf("error blames the binary that carries both: %v", err)
	}
	if !strings.Contains(out.String(), onlyAmd+" (unknown format): MISSING the Linux tool servers for arm64\n") {
		t.Errorf("report does not flag %s:\n%s", onlyAmd, out.String())
	}
}

func TestRunRefusesWhenTheBuildsAreNotThere(t *testing.T) {
	t.Parallel()
	dir, _, _ := buildsDir()
	delete(dir, "dirtywork-linux-arm64")
	// A file under the right name that is not an arm64 ELF is no build.
	dir["dirtywork-linux-riscv64"] = &fstest.MapFile{Data: []byte("not an executable")}
	bin := writeFile(t, "dirtywork", []byte("anything"))
	for _, arches := range [][]string{{"arm64"}, {"riscv64"}} {
		err := run(&bytes.Buffer{}, dir, arches, []string{bin})
		if err == nil || !strings.Contains(err.Error(), "no Linux build for "+arches[0]) {
			t.Errorf("arches %v: err = %v, want no Linux build", arches, err)
		}
	}
}

func TestPlatformReadsTheBinaryHeader(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := platform(data), runtime.GOOS+"/"+runtime.GOARCH; got != want {
		t.Fatalf("platform(test binary) = %q, want %q", got, want)
	}
	if got := platform([]byte("#!/bin/sh\n")); got != "unknown format" {
		t.Fatalf("platform(script) = %q", got)
	}
}
