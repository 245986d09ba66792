// Command carrycheck checks that dirtywork binaries carry the Linux tool
// servers a docker sandbox needs: each binary must contain, byte for byte,
// every build in the carried builds directory (the files that package
// sandbox/toolbox/carried embeds). It reads the binaries instead of running
// them, so it checks macOS and arm64 builds on any machine; a binary this
// machine can run also says what it carries in `dirtywork version`.
//
//	go run ./scripts/carrycheck -arches amd64,arm64 dist/*/dirtywork
package main

import (
	"bytes"
	"debug/elf"
	"debug/macho"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/dirtywork/dirtywork/sandbox/toolbox/carried"
)

// defaultBuilds is the directory `task build:carry` and the release's
// before-hooks fill, relative to the repository root.
const defaultBuilds = "sandbox/toolbox/carried/builds"

func main() {
	builds := flag.String("builds", defaultBuilds, "directory of the carried Linux builds (dirtywork-linux-<goarch>)")
	arches := flag.String("arches", "amd64,arm64", "comma-separated GOARCH values every binary must carry")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: carrycheck [-builds DIR] [-arches LIST] BINARY...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(os.Stdout, os.DirFS(*builds), strings.Split(*arches, ","), flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "carrycheck:", err)
		os.Exit(1)
	}
}

// run checks every binary against the builds for arches in dir and prints
// one line a binary; the error names every binary that misses a build.
func run(w io.Writer, dir fs.FS, arches, binaries []string) error {
	builds := carried.New(dir)
	want := map[string][]byte{}
	for _, arch := range arches {
		data, ok := builds.Binary(arch)
		if !ok {
			return fmt.Errorf("no Linux build for %s in the builds directory (build them first: task build:carry)", arch)
		}
		want[arch] = data
	}
	var failed []error
	for _, path := range binaries {
		data, err := os.ReadFile(path)
		if err != nil {
			failed = append(failed, err)
			continue
		}
		missing := missingBuilds(data, arches, want)
		fmt.Fprintf(w, "%s (%s): %s\n", path, platform(data), verdict(arches, missing))
		if len(missing) > 0 {
			failed = append(failed, fmt.Errorf("%s does not carry the Linux tool server for %s", path, strings.Join(missing, ", ")))
		}
	}
	return errors.Join(failed...)
}

// missingBuilds are the arches whose build binary does not contain.
func missingBuilds(binary []byte, arches []string, builds map[string][]byte) []string {
	var missing []string
	for _, arch := range arches {
		// go:embed stores a file's bytes whole and uncompressed, so a
		// binary that embeds a build contains it as one run of bytes.
		if !bytes.Contains(binary, builds[arch]) {
			missing = append(missing, arch)
		}
	}
	return missing
}

func verdict(arches, missing []string) string {
	if len(missing) == 0 {
		return "carries Linux tool servers: " + strings.Join(arches, ", ")
	}
	return "MISSING the Linux tool servers for " + strings.Join(missing, ", ")
}

// platform names the GOOS/GOARCH a binary is built for, from its header,
// so the report shows which release build each line is about.
func platform(data []byte) string {
	r := bytes.NewReader(data)
	if f, err := macho.NewFile(r); err == nil {
		switch f.Cpu {
		case macho.CpuAmd64:
			return "darwin/amd64"
		case macho.CpuArm64:
			return "darwin/arm64"
		}
		return "darwin/" + f.Cpu.String()
	}
	if f, err := elf.NewFile(r); err == nil {
		switch f.Machine {
		case elf.EM_X86_64:
			return "linux/amd64"
		case elf.EM_AARCH64:
			return "linux/arm64"
		}
		return "elf/" + f.Machine.String()
	}
	return "unknown format"
}
