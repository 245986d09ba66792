package carried

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"io/fs"
	"slices"
	"testing"
	"testing/fstest"
)

// elfFile is the start of an ELF executable: the header fields Binary
// checks, then body, so tests can tell which file came back.
func elfFile(class elf.Class, data elf.Data, abi elf.OSABI, mach elf.Machine, body string) []byte {
	hdr := make([]byte, 64)
	copy(hdr, elf.ELFMAG)
	hdr[elf.EI_CLASS] = byte(class)
	hdr[elf.EI_DATA] = byte(data)
	hdr[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	hdr[elf.EI_OSABI] = byte(abi)
	var order binary.ByteOrder = binary.LittleEndian
	if data == elf.ELFDATA2MSB {
		order = binary.BigEndian
	}
	order.PutUint16(hdr[16:], uint16(elf.ET_EXEC))
	order.PutUint16(hdr[18:], uint16(mach))
	return append(hdr, body...)
}

func linuxELF(mach elf.Machine, body string) []byte {
	return elfFile(elf.ELFCLASS64, elf.ELFDATA2LSB, elf.ELFOSABI_NONE, mach, body)
}

func TestDirFindsOnlyBuildsOfTheirArchitecture(t *testing.T) {
	amd64 := linuxELF(elf.EM_X86_64, "amd64 build")
	arm64 := linuxELF(elf.EM_AARCH64, "arm64 build")
	s390x := elfFile(elf.ELFCLASS64, elf.ELFDATA2MSB, elf.ELFOSABI_NONE, elf.EM_S390, "s390x build")
	fsys := fstest.MapFS{
		"README.md":             {Data: []byte("# not a build\n")},
		"dirtywork-linux-amd64": {Data: amd64, Mode: 0o755},
		"dirtywork-linux-arm64": {Data: arm64, Mode: 0o755},
		"dirtywork-linux-s390x": {Data: s390x, Mode: 0o755},
		// An arm64 build under riscv64's name would fail in the container.
		"dirtywork-linux-riscv64": {Data: arm64},
		// A FreeBSD build is ELF of the right machine, but not Linux.
		"dirtywork-linux-ppc64le":   {Data: elfFile(elf.ELFCLASS64, elf.ELFDATA2LSB, elf.ELFOSABI_FREEBSD, elf.EM_PPC64, "")},
		"dirtywork-linux-386":       {Data: elfFile(elf.ELFCLASS32, elf.ELFDATA2LSB, elf.ELFOSABI_NONE, elf.EM_386, "")},
		"dirtywork-linux-mips64":    {Data: []byte("#!/bin/sh\n")},
		"dirtywork-darwin-arm64":    {Data: []byte("\xcf\xfa\xed\xfe Mach-O")},
		"dirtywork-linux-":          {Data: amd64},
		"dirtywork-linux-amd64x":    {Data: amd64},
		"sub/dirtywork-linux-arm64": {Data: arm64},
	}
	d := New(fsys)

	tests := []struct {
		goarch string
		want   []byte // nil: no build
	}{
		{"amd64", amd64},
		{"arm64", arm64},
		{"s390x", s390x},
		{"riscv64", nil},
		{"ppc64le", nil},
		{"386", nil},
		{"mips64", nil},
		{"", nil},
		{"README.md", nil},
		{"../README.md", nil},
		{"amd64x", nil},
		{"AMD64", nil},
	}
	for _, tt := range tests {
		got, ok := d.Binary(tt.goarch)
		if ok != (tt.want != nil) || !bytes.Equal(got, tt.want) {
			t.Errorf("Binary(%q) = %d bytes, %v; want %d bytes", tt.goarch, len(got), ok, len(tt.want))
		}
	}
	if got, want := d.Arches(), []string{"amd64", "arm64", "s390x"}; !slices.Equal(got, want) {
		t.Errorf("Arches() = %q, want %q", got, want)
	}
}

func TestDirWithoutBuilds(t *testing.T) {
	d := New(fstest.MapFS{"README.md": {Data: []byte("# builds\n")}})
	if got := d.Arches(); len(got) != 0 {
		t.Errorf("Arches() = %q, want none", got)
	}
	if data, ok := d.Binary("amd64"); ok || data != nil {
		t.Errorf("Binary(amd64) = %d bytes, %v; want none", len(data), ok)
	}
	// A truncated build is no build.
	d = New(fstest.MapFS{"dirtywork-linux-amd64": {Data: linuxELF(elf.EM_X86_64, "")[:19]}})
	if _, ok := d.Binary("amd64"); ok || len(d.Arches()) != 0 {
		t.Error("a truncated ELF header counted as a build")
	}
}

// The embedded directory is whatever the checkout held when the test was
// built (only README.md in git; builds when `task build:carry` ran), so
// this asserts what holds either way. Under the build tag nocarry, the
// tags the carried builds themselves are made with, nothing is embedded.
func TestEmbeddedBuildsAreOnlyBuilds(t *testing.T) {
	_, err := fs.Stat(embedded, "builds/README.md")
	if carries && err != nil {
		t.Fatalf("the builds directory is not embedded: %v", err)
	}
	arches := Arches()
	if !carries && (err == nil || len(arches) > 0) {
		t.Fatalf("a nocarry build embeds something: README %v, builds %q", err, arches)
	}
	for _, goarch := range arches {
		data, ok := Binary(goarch)
		if !ok {
			t.Errorf("Arches() lists %s, Binary(%s) finds nothing", goarch, goarch)
			continue
		}
		file, err := fs.ReadFile(embedded, "builds/"+namePrefix+goarch)
		if err != nil || !bytes.Equal(data, file) {
			t.Errorf("Binary(%s) is not builds/%s%s (%v)", goarch, namePrefix, goarch, err)
		}
	}
	for goarch := range machines {
		if _, ok := Binary(goarch); ok != slices.Contains(arches, goarch) {
			t.Errorf("Binary(%s) = %v, but Arches() = %q", goarch, ok, arches)
		}
	}
	for _, name := range []string{"README.md", "builds/README.md", "../README.md", "", "."} {
		if data, ok := Binary(name); ok || data != nil {
			t.Errorf("Binary(%q) returned %d bytes", name, len(data))
		}
	}
}
