package sandbox

// VerifyRun is what one verify step left: the command's result, and what
// it was judged on.
//
// A workspace runs the verify command on the tree as the export will take
// it (sealed: see package seal), with no process of the worker alive, in a
// session the worker never touched (no git dir, config, hook, home or
// /tmp of its), and takes out afterwards whatever the command made.
type VerifyRun struct {
	BashResult
	// Tree names the tree the command judged (seal.Manifest.Hash).
	Tree string
	// Changed are the paths of that tree the command changed or removed;
	// a run whose verify changed the tree it judged does not pass.
	Changed []string
	// Sealed says, a line each, what sealing took out of the tree before
	// the command ran (the model is told, and the run's evidence lists
	// them); empty when nothing.
	Sealed []string
}
