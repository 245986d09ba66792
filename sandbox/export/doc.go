// Package export brings a sandboxed tree back to the host: it reads the tar
// stream `git archive` produced inside the export container, refuses
// anything a worker could have planted to reach outside the worktree, and
// writes the rest into the worktree.
//
// Validate checks a stream without touching the filesystem; Extract checks
// and writes in the same single pass. Both read the stream once, in order,
// and hold only the member names in memory, so a hostile archive costs at
// most the caps it is read against. Every failure is a *Refusal whose text
// is the export_status reason (`export_failed: <reason>`); Extract leaves
// the destination holding only its `.git` file after one.
package export
