package jail

const (
	// setupArg, as the first argument, turns the binary into the jail's
	// setup child. It is not a command anyone types.
	setupArg = "__jail"
	// exitSetup is the setup child's exit status when it failed before
	// executing the program; the parent goes by the control socket, not
	// by this, since the program may exit with any status.
	exitSetup = 125
)
