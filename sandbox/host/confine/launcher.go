package confine

const (
	// launcherArg, as the first argument, turns the binary into the
	// launcher. It is not a command anyone types.
	launcherArg = "__confine"
	// policyFD and statusFD are the launcher's ExtraFiles: the policy is
	// read from the first, a setup failure is reported on the second.
	policyFD = 3
	statusFD = 4
	// exitSetup and exitExec are the launcher's exit statuses when it
	// failed before or at executing bash. The parent goes by the status
	// pipe, not by these, since bash may exit with any status.
	exitSetup = 125
	exitExec  = 127
	// maxPolicy bounds the policy the launcher reads.
	maxPolicy = 64 << 20
	// maxReport bounds the failure report the parent reads.
	maxReport = 64 << 10
	// stageReady is the launcher's report that a probe set everything up.
	stageReady = "ready"
)

// readyReport is the probe's success report.
var readyReport = []byte(`{"stage":"` + stageReady + `"}`)
