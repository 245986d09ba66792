package confine

import "errors"

// Sentinel errors for the states callers branch on.
var (
	// ErrConfine: the launcher could not set confinement up (namespaces,
	// mounts or Landlock), so the command did not run.
	ErrConfine = errors.New("cannot confine the command")
	// ErrExec: confinement was in place but bash could not be executed.
	ErrExec = errors.New("cannot execute bash")
	// ErrUnsupported: this system has no confinement (not Linux).
	ErrUnsupported = errors.New("confinement is only available on Linux")
)

// Stages a SetupError can come from.
const (
	// StageStart: the launcher process could not be started, typically
	// because the namespaces it asks for are not permitted.
	StageStart = "start"
	// StagePolicy: the launcher could not read its policy.
	StagePolicy = "policy"
	// StageMount: a private mount could not be made.
	StageMount = "mount"
	// StageLandlock: the Landlock ruleset could not be built or enforced.
	StageLandlock = "landlock"
	// StageExec: bash could not be executed.
	StageExec = "exec"
)

// SetupError is a launcher failure before bash ran. It matches ErrExec
// when bash itself could not be executed and ErrConfine otherwise.
type SetupError struct {
	// Stage is where it failed; one of the Stage constants.
	Stage string `json:"stage"`
	// Msg is the launcher's description of the failure.
	Msg string `json:"error"`
}

// Error says where the launcher failed and why.
func (e *SetupError) Error() string { return e.Stage + ": " + e.Msg }

// Is makes errors.Is(err, ErrExec) and errors.Is(err, ErrConfine) work.
func (e *SetupError) Is(target error) bool {
	if e.Stage == StageExec {
		return target == ErrExec
	}
	return target == ErrConfine
}
