// Package seatbelt confines host mode on macOS, where there is no Linux
// jail: it generates the Seatbelt profile (SBPL) a run's tool server is
// started under by /usr/bin/sandbox-exec, and decides what that profile
// grants a path or a connection.
//
// Both come from one rule list (Policy.rules): the profile is that list
// written out, and Decide and Connect evaluate it, so the unit tests of
// the decisions, which run on every system, test the profile macOS
// enforces. Paths of the run (the worktree, its private directories, the
// toolchains) never enter the profile's text: they are parameters
// (sandbox-exec -D NAME=PATH, (param "NAME") in the profile), so no path,
// whatever it holds, can add a rule.
//
// The profile denies by default. It allows processes to run and fork,
// signals and process information within the sandbox, a few sysctl reads
// and Mach services; reads of the system's directories but not of the
// operator's home; reads of the declared toolchains and read-only paths;
// writes only to the worktree, the run's writable directories and a few
// devices; nothing at all of the hidden paths (the worktree's own .git,
// toolchain secrets); and no network, or, for a run with network, only
// the egress proxy's port on loopback.
package seatbelt
