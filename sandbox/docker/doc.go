// Package docker is dirtywork's only door to the Docker daemon. It talks to
// the Engine API through github.com/docker/docker/client with API version
// negotiation and never starts a docker CLI process, so the same code works
// against a local socket and a remote engine.
//
// The daemon is found the way the docker CLI finds it (DiscoverEndpoint):
// DOCKER_HOST, else the CLI's current context, else the default socket.
// Every call runs under a deadline (the contract's query, lifecycle and
// transfer limits), and every error is classified by its type, not its
// English text: callers branch on ErrNotFound, ErrConflict,
// ErrDaemonUnreachable and ErrTimedOut with errors.Is.
//
// Client is the daemon.Engine the docker workspace (package workspace)
// runs on (ConnectEngine); the runs store lists and removes what runs left
// through it (ListLabelled and the label-checked removals).
//
// The worker image is built here too, from the Dockerfile package
// workerimage embeds (BuildImage), on a Debian base that BootstrapBase makes
// with debootstrap where no registry is reachable.
package docker
