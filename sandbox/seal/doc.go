// Package seal settles a run's tree before anything judges it or takes it
// away: the verify step and the export. Both modes call it with no process
// of the worker left alive, so nothing changes under it.
//
// Sealing does three things, in one walk that follows no link:
//
//  1. It takes out what the export would not bring to the lane, so that
//     what verify judges is what the reviewer gets: directories git would
//     take for a repository and .git entries (Report.Repositories, which
//     the caller quarantines before a second call removes them), FIFOs,
//     sockets and devices, links the run made that are absolute or lead
//     out of the tree, and (docker) paths too long for the daemon to read.
//  2. It takes out the git-ignored files the run made or changed: they are
//     hidden from every diff, yet the code under test would import them (a
//     directory holding a .gitignore of "*" hides a package that patches
//     what the tests test). They are listed for review (Report.Ignored) and
//     never reach verify or the lane. Ignored files the operator's --setup
//     made before the worker started (node_modules, a venv) stay.
//  3. It strips setuid and setgid bits, notes other mode changes a
//     reviewer should see, and records every remaining entry with its
//     content's digest in a Manifest, whose Hash names the tree.
//
// "The run made or changed" is read from each entry's change time: the
// kernel sets ctime on every change to an entry — content, mode, name,
// links — and no process can set it back, so an entry whose ctime is
// after Baseline.Since was touched after the checkout and the setup ended.
//
// After verify ran, Manifest.Rollback removes what verify itself created
// (caches, build output) and reports every entry that verify changed or
// removed: a verify that changed the tree it judged did not pass.
package seal
