package docker

import (
	"errors"
	"time"
)

// Refusals of BootstrapBase, worded for the operator.
var (
	// ErrNeedsRoot: debootstrap must run as root.
	ErrNeedsRoot = errors.New("making the base image with debootstrap needs root " +
		"(it creates device nodes and files owned by other users)")
	// ErrNoDebootstrap: debootstrap is not installed.
	ErrNoDebootstrap = errors.New("debootstrap is not installed")
	// ErrBootstrapUnsupported: debootstrap runs on Linux only.
	ErrBootstrapUnsupported = errors.New("making the base image with debootstrap needs Linux")
)

// BootstrapTimeout bounds debootstrap, which downloads and unpacks the
// base system (about a minute on a good mirror).
const BootstrapTimeout = 20 * time.Minute
