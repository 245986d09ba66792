// Package workerimage holds the build inputs of the docker sandbox's worker
// image, embedded so that the one dirtywork binary can build the image
// anywhere: the Dockerfile and the script that makes its Debian base where
// no container registry is reachable (see README.md in this directory).
//
// The package lives in the repository's docker/ directory because go:embed
// reaches only files in its own directory and below; it is named
// workerimage, not docker, so that it is never confused with the Engine API
// client in sandbox/docker. It has no dependencies: building the image
// through the Engine API is sandbox/docker's job.
package workerimage

import (
	_ "embed"
	"strings"
)

// The embedded files. They are unexported and handed out as strings so no
// caller can change what every later build uses.
var (
	//go:embed Dockerfile
	dockerfile string
	//go:embed bootstrap-base.sh
	bootstrapScript string
)

const (
	// Repository is the name of the worker image dirtywork builds locally;
	// its tag is the dirtywork version (see DefaultImage).
	Repository = "dirtywork-worker"
	// BaseImage is the Debian bookworm base that bootstrap-base.sh makes and
	// the Dockerfile's BASE argument names by default.
	BaseImage = "dirtywork-base:bookworm"
	// RegistryBase is the base to build on where a registry is reachable and
	// BaseImage was never bootstrapped: Debian's own minimal bookworm image.
	RegistryBase = "debian:bookworm-slim"
	// BaseArg is the Dockerfile's build argument naming the base image.
	BaseArg = "BASE"
)

// Dockerfile returns the worker image's Dockerfile.
func Dockerfile() string { return dockerfile }

// BootstrapScript returns bootstrap-base.sh, the bash script that makes the
// base's root filesystem with debootstrap in the directory given as its only
// argument.
func BootstrapScript() string { return bootstrapScript }

// maxTagLen is the longest tag the Docker reference grammar accepts.
const maxTagLen = 128

// DefaultImage is the worker image this build of dirtywork uses unless told
// otherwise: Repository tagged with version. Characters a tag may not
// contain (such as the "+" of "dev-abc+dirty") become "-", so every version
// string gives a valid reference.
func DefaultImage(version string) string {
	return Repository + ":" + tagFor(version)
}

// tagFor turns s into a valid image tag: [A-Za-z0-9_.-], not starting with
// "." or "-", at most 128 characters.
func tagFor(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '.', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	tag := b.String()
	if tag == "" {
		return "dev"
	}
	if tag[0] == '.' || tag[0] == '-' {
		tag = "v" + tag
	}
	if len(tag) > maxTagLen {
		tag = tag[:maxTagLen]
	}
	return tag
}
