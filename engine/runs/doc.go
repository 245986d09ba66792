// Package runs is the life of a run after it ended: one Store over the
// runs root, with the review loop's every rule in one place. `dirtywork
// runs …`, mission control and orchestrators call exactly this API.
//
// A Store lists and watches runs (typed records plus liveness, the lock
// a live run holds), shows their changes (Diff), records verdicts, commits
// a run's work onto its branch (Accept), merges it into the branch it
// started from (Merge, only when git says it is conflict-free), cleans up
// what a run left without deleting work that is merged nowhere (Clean
// parks it under refs/dirtywork/parked/<slug>), snapshots and exports
// runs, and reconciles what crashes left behind (Reconcile).
//
// Writes to run.json go through transcript's locked read-merge-write, so
// keys this package does not know are kept, and a verdict landing while
// the run writes its end loses nothing. Host git only ever runs
// config-neutral (gitops), and never reads git metadata a worker wrote.
package runs
