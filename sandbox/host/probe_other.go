//go:build !darwin

package host

import "github.com/dirtywork/dirtywork/sandbox/host/jail"

// platformProbe: outside macOS, host mode's confinement is the jail,
// which jail.Probe tries out.
func platformProbe() (jail.Report, bool) { return jail.Report{}, false }
