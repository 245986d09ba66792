// Package host is the host-mode workspace: the run's tree is a git
// worktree on the operator's machine, worked on from inside a jail made
// for the run (package jail): a container without Docker.
//
// The jail's pid 1 is the tool server (`dirtywork toolbox`, package
// toolbox), which answers every tool call, bash included, over one pair of
// pipes, keeps the tree's budget and kills what a command leaves behind,
// exactly as in docker mode; Workspace is its client. The worker's git
// works on a private repository in the run's directory, presented at
// <worktree>/.git inside the jail by a read-only gitfile: the host
// repository, the worktree's admin dir and the common dir are never within
// its reach. The base tree is checked out inside the jail while the first
// model request is out.
//
// The host keeps what the worker cannot forge: a measurement of the tree
// while a command runs, which kills the jail on a breach, and Finalize,
// which stops the jail, moves nested repositories out of the tree,
// rebuilds the lane's index from the base, computes the diff in Go and,
// with AllowCommit, imports the worker's commits through a quarantine. No
// host git reads git metadata the worker wrote.
//
// Where the jail cannot be set up whole, Open refuses (ErrNoJail; the CLI
// exits 2 naming each missing layer and its fix) unless the caller allows
// running without the missing layers; Info then says what is off.
package host
