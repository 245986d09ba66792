package jail

import (
	"fmt"
	"strings"
)

// Layer names, as Report and Info use them.
const (
	LayerUserNS   = "user_ns"
	LayerRoot     = "root"
	LayerNetwork  = "network"
	LayerIDMap    = "idmapped_mounts"
	LayerLandlock = "landlock"
	LayerSeccomp  = "seccomp"
	LayerPids     = "pids_limit"
	LayerMemory   = "memory_limit"
	LayerCPU      = "cpu_limit"
)

// Report is what Probe found, one entry per layer.
type Report struct {
	Layers []LayerStatus `json:"layers"`
}

// LayerStatus is one layer as Probe found it.
type LayerStatus struct {
	Name string `json:"name"`
	// OK is set when the layer can be set up on this system.
	OK bool `json:"ok"`
	// Detail says what was found ("ABI 7", "cgroup-v1").
	Detail string `json:"detail,omitempty"`
	// Problem says why the layer cannot be set up, Fix what the operator
	// can do about it; both "" when OK.
	Problem string `json:"problem,omitempty"`
	Fix     string `json:"fix,omitempty"`
	// Essential layers are the jail itself: without them there is no
	// jail, whatever Config.AllowUnconfined says.
	Essential bool `json:"essential,omitempty"`
}

// Err is nil when every layer can be set up, else an *UnavailableError
// naming each missing one with its reason and fix.
func (r Report) Err() error {
	var missing []LayerStatus
	for _, l := range r.Layers {
		if !l.OK {
			missing = append(missing, l)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return &UnavailableError{Missing: missing}
}

// Layer returns the named layer's status, and false when the report has
// none by that name.
func (r Report) Layer(name string) (LayerStatus, bool) {
	for _, l := range r.Layers {
		if l.Name == name {
			return l, true
		}
	}
	return LayerStatus{}, false
}

// UnavailableError is a jail that cannot be built whole on this system.
type UnavailableError struct {
	Missing []LayerStatus
}

// Error names every missing layer, its reason and its fix.
func (e *UnavailableError) Error() string {
	parts := make([]string, 0, len(e.Missing))
	for _, l := range e.Missing {
		s := fmt.Sprintf("%s: %s", l.Name, l.Problem)
		if l.Fix != "" {
			s += " (fix: " + l.Fix + ")"
		}
		parts = append(parts, s)
	}
	return "the host sandbox cannot be set up on this system: " + strings.Join(parts, "; ")
}

// Essential reports whether a missing layer is one no setting can do
// without.
func (e *UnavailableError) Essential() bool {
	for _, l := range e.Missing {
		if l.Essential {
			return true
		}
	}
	return false
}
