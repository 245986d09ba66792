package host

import (
	"github.com/dirtywork/dirtywork/sandbox/host/jail"
	"github.com/dirtywork/dirtywork/sandbox/host/seatbelt"
)

// platformProbe: on macOS host mode is confined by Seatbelt, found or
// not; the Linux jail does not exist here.
func platformProbe() (jail.Report, bool) {
	return SeatbeltReport(seatbelt.DefaultPath), true
}
