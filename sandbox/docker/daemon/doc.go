// Package daemon is the docker sandbox's view of a Docker daemon, free of
// the Docker SDK: the Engine the workspace (package workspace) talks
// through, which package docker implements over the Engine API and tests
// fake; the small types its calls take and return; the error classes and
// deadlines every call keeps; and the names and labels of what a run
// makes on the daemon.
package daemon
