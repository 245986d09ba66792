// Package confine runs a bash command confined: in its own session, in
// private mount, PID and IPC namespaces that hide the host's daemon sockets,
// under a Landlock ruleset that limits what it may read and write.
//
// Landlock restricts the calling thread and everything it starts, so it
// cannot be applied to dirtywork itself. Instead the parent re-executes its
// own binary as a launcher (the hidden first argument "__confine"), which
// sets the confinement up and then replaces itself with bash. Every binary
// that starts confined commands must call MaybeRun first thing in main (and
// test binaries in TestMain), so that it can serve as that launcher.
//
// The launcher reads its Policy from a pipe on fd 3 and reports a setup
// failure on fd 4, which is close-on-exec: when the parent reads end of file
// without a message, bash is running under the full policy. A policy that
// asks for Landlock is enforced or the command does not run; there is no
// best effort.
package confine
