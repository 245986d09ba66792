// Package carried holds the Linux builds of dirtywork that this build
// carries, so that a docker sandbox can run the tool server in an image
// whose platform this binary is not: a macOS build of dirtywork, or a
// Linux build talking to an image of another architecture.
//
// The builds are embedded from the builds directory, which git keeps with
// only its README; `task build:carry` generates dirtywork-linux-amd64 and
// dirtywork-linux-arm64 into it before the carrying binary is built. It
// builds them with the build tag nocarry, under which nothing is embedded:
// a tool server needs no tool servers, and a build made while the
// directory holds another must not carry that one inside itself.
package carried

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"io"
	"io/fs"
	"strings"
)

// namePrefix starts the name of every build; the rest is its GOARCH.
const namePrefix = "dirtywork-linux-"

// Dir is a directory of Linux builds named dirtywork-linux-<goarch>.
type Dir struct {
	fsys fs.FS
}

// New is the builds directory at the root of fsys.
func New(fsys fs.FS) Dir {
	return Dir{fsys: fsys}
}

// builds is the directory embedded in this binary.
var builds = func() Dir {
	sub, err := fs.Sub(embedded, "builds")
	if err != nil {
		// fs.Sub fails only on an invalid path, and "builds" is valid.
		panic("carried: " + err.Error())
	}
	return New(sub)
}()

// Binary is the carried Linux build for goarch ("amd64", "arm64"), and
// whether this binary carries one.
func Binary(goarch string) ([]byte, bool) {
	return builds.Binary(goarch)
}

// Arches are the architectures this binary carries a Linux build for,
// sorted.
func Arches() []string {
	return builds.Arches()
}

// Binary is the build for goarch, and whether d holds one: a file named
// dirtywork-linux-<goarch> that is a Linux ELF executable of that
// architecture. Anything else (a README, a build of another architecture
// under the wrong name, a truncated file) is not a build.
func (d Dir) Binary(goarch string) ([]byte, bool) {
	want, ok := machines[goarch]
	if !ok {
		return nil, false
	}
	data, err := fs.ReadFile(d.fsys, namePrefix+goarch)
	if err != nil || !want.matches(data) {
		return nil, false
	}
	return data, true
}

// Arches are the architectures d holds a build for, sorted.
func (d Dir) Arches() []string {
	entries, err := fs.ReadDir(d.fsys, ".")
	if err != nil {
		return nil
	}
	var arches []string
	for _, e := range entries {
		goarch, ok := strings.CutPrefix(e.Name(), namePrefix)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		if want, known := machines[goarch]; known && d.headerMatches(e.Name(), want) {
			arches = append(arches, goarch)
		}
	}
	return arches // fs.ReadDir sorts by name, so by GOARCH
}

// headerMatches reads only name's ELF header, so listing the builds does
// not copy them.
func (d Dir) headerMatches(name string, want machine) bool {
	f, err := d.fsys.Open(name)
	if err != nil {
		return false
	}
	defer func() { _ = f.Close() }() // read-only
	hdr := make([]byte, elfHeaderPrefix)
	if _, err := io.ReadFull(f, hdr); err != nil {
		return false
	}
	return want.matches(hdr)
}

// machine is what an ELF header of a Linux build for one GOARCH says.
type machine struct {
	class elf.Class
	data  elf.Data
	mach  elf.Machine
}

// machines are the GOARCH values a carried build can be for; a container's
// image names its architecture the same way.
var machines = map[string]machine{
	"amd64":   {elf.ELFCLASS64, elf.ELFDATA2LSB, elf.EM_X86_64},
	"arm64":   {elf.ELFCLASS64, elf.ELFDATA2LSB, elf.EM_AARCH64},
	"riscv64": {elf.ELFCLASS64, elf.ELFDATA2LSB, elf.EM_RISCV},
	"ppc64le": {elf.ELFCLASS64, elf.ELFDATA2LSB, elf.EM_PPC64},
	"s390x":   {elf.ELFCLASS64, elf.ELFDATA2MSB, elf.EM_S390},
}

// elfHeaderPrefix is how much of an ELF header matches reads: the ident
// (16 bytes), e_type (2) and e_machine (2).
const elfHeaderPrefix = 20

// matches reports whether data starts with the ELF header of a Linux
// executable for m: a mislabelled build would otherwise reach the
// container and fail there with an exec format error.
func (m machine) matches(data []byte) bool {
	if len(data) < elfHeaderPrefix || !bytes.HasPrefix(data, []byte(elf.ELFMAG)) {
		return false
	}
	if elf.Class(data[elf.EI_CLASS]) != m.class || elf.Data(data[elf.EI_DATA]) != m.data {
		return false
	}
	// Go marks its Linux builds SYSV (0); other systems' builds, such as
	// FreeBSD's, carry their own ABI.
	if abi := elf.OSABI(data[elf.EI_OSABI]); abi != elf.ELFOSABI_NONE && abi != elf.ELFOSABI_LINUX {
		return false
	}
	var order binary.ByteOrder = binary.LittleEndian
	if m.data == elf.ELFDATA2MSB {
		order = binary.BigEndian
	}
	if typ := elf.Type(order.Uint16(data[16:18])); typ != elf.ET_EXEC && typ != elf.ET_DYN {
		return false
	}
	return elf.Machine(order.Uint16(data[18:20])) == m.mach
}
