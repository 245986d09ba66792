// Package host is the host-mode workspace: the run's tree is a git
// worktree on the operator's machine.
//
// File tools go through an os.Root on the worktree (package fsops), so no
// path the model names reaches outside it and nothing writes into .git/.
// bash runs through package confine: in its own session, in private mount,
// PID and IPC namespaces that hide the host's daemon sockets (Docker's
// among them), and under Landlock, which lets it write only in the
// worktree, a per-workspace scratch TMPDIR and the git paths the worktree
// needs, and read everything except the operator's home (the worktree,
// the repository's git dir and the toolchains excepted). When bash ends or
// times out, everything it started dies with it.
//
// Where the kernel cannot confine bash, Open refuses (the CLI exits 2 and
// names DIRTYWORK_ALLOW_UNCONFINED=1) unless the caller allows running
// unconfined; Info then says what is missing. Outside Linux only the bash
// deny-list guards host mode, and Info says that too.
package host
