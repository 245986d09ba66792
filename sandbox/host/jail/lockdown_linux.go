package jail

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/dirtywork/dirtywork/sandbox/host/jail/seccomp"
)

// Secure bits: root (the jail's uid 0) gets no capability from execve or
// from a uid change, the process cannot regain any through keep-caps or
// the ambient set, and all of it is locked.
const securebits = 1<<0 | 1<<1 | // SECBIT_NOROOT, _LOCKED
	1<<2 | 1<<3 | // SECBIT_NO_SETUID_FIXUP, _LOCKED
	1<<5 | // SECBIT_KEEP_CAPS_LOCKED
	1<<6 | 1<<7 // SECBIT_NO_CAP_AMBIENT_RAISE, _LOCKED

// lockDown drops every capability, sets no_new_privs and enforces Landlock
// and seccomp on the calling thread, which executes the program next.
func (s *setup) lockDown() (report, error) {
	sp := s.spec
	var rep report
	// The bounding set and the secure bits need CAP_SETPCAP, so they go
	// before the capability sets are cleared.
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, securebits, 0, 0, 0); err != nil {
		return rep, inLayer(LayerUserNS, fmt.Errorf("set the secure bits: %w", err))
	}
	last, err := lastCap()
	if err != nil {
		return rep, inLayer(LayerUserNS, err)
	}
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			return rep, inLayer(LayerUserNS, fmt.Errorf("drop capability %d from the bounding set: %w", c, err))
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return rep, inLayer(LayerUserNS, fmt.Errorf("clear the ambient capabilities: %w", err))
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return rep, inLayer(LayerUserNS, fmt.Errorf("set no_new_privs: %w", err))
	}
	if sp.LandlockABI > 0 {
		scopes, err := s.enforceLandlock()
		switch {
		case err == nil:
			rep.LandlockABI, rep.LandlockScopes = sp.LandlockABI, scopes
		case sp.AllowUnconfined:
			rep.Off = append(rep.Off, layerOff(LayerLandlock, err.Error()))
		default:
			return rep, inLayer(LayerLandlock, err)
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var none [2]unix.CapUserData
	if err := unix.Capset(&hdr, &none[0]); err != nil {
		return rep, inLayer(LayerUserNS, fmt.Errorf("clear the capability sets: %w", err))
	}
	if sp.Seccomp {
		err := loadSeccomp()
		switch {
		case err == nil:
			rep.Seccomp = true
		case sp.AllowUnconfined:
			rep.Off = append(rep.Off, layerOff(LayerSeccomp, err.Error()))
		default:
			return rep, inLayer(LayerSeccomp, err)
		}
	}
	return rep, nil
}

// loadSeccomp assembles and loads the filter.
func loadSeccomp() error {
	prog, err := seccomp.Program()
	if err != nil {
		return err
	}
	return seccomp.Load(prog)
}

// lastCap is the highest capability number this kernel knows.
func lastCap() (int, error) {
	data, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return 0, fmt.Errorf("read the last capability: %w", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return 0, fmt.Errorf("read the last capability: %w", err)
	}
	return n, nil
}

// landlockConfigs are go-landlock's presets by ABI, index 0 = V1.
var landlockConfigs = []landlock.Config{
	landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5, landlock.V6,
	landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11,
}

// maxLandlockABI is the highest Landlock ABI this build can enforce.
func maxLandlockABI() int { return len(landlockConfigs) }

// kernelLandlockABI is the kernel's Landlock ABI, 0 without Landlock;
// tests stand in a kernel without it.
var kernelLandlockABI = landlockABI

func landlockABI() int {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil || v < 0 {
		return 0
	}
	return v
}

// enforceLandlock enforces, at the spec's ABI, every filesystem right and
// IPC scope that ABI knows (the network is the namespaces' business):
// reading and executing everywhere in the jail, which holds only what was
// meant to be seen, and writing only where a writable mount, /tmp or
// /dev/shm is, and the devices. Nothing is best effort.
func (s *setup) enforceLandlock() ([]string, error) {
	abi := s.spec.LandlockABI
	if abi < 1 || abi > len(landlockConfigs) {
		return nil, fmt.Errorf("unsupported Landlock ABI %d (this build knows 1 to %d)", abi, len(landlockConfigs))
	}
	v := landlockConfigs[abi-1]
	cfg := landlock.Config{HandledAccessFS: v.HandledAccessFS, Scoped: v.Scoped}
	refer := cfg.HandledAccessFS&llsys.AccessFSRefer != 0
	ioctl := cfg.HandledAccessFS&llsys.AccessFSIoctlDev != 0
	rules := []landlock.Rule{landlock.RODirs("/")}
	for _, d := range s.writableDirs {
		r := landlock.RWDirs(d)
		if refer {
			r = r.WithRefer()
		}
		rules = append(rules, r)
	}
	if len(s.writableFiles) > 0 {
		rules = append(rules, landlock.RWFiles(s.writableFiles...))
	}
	var devs []string
	for _, d := range devices {
		if _, err := os.Stat("/dev/" + d); err == nil {
			devs = append(devs, "/dev/"+d)
		}
	}
	devs = append(devs, "/dev/pts")
	dev := landlock.RWFiles(devs...)
	if ioctl {
		dev = dev.WithIoctlDev()
	}
	rules = append(rules, dev)
	if err := cfg.Restrict(rules...); err != nil {
		return nil, fmt.Errorf("enforce Landlock ABI %d: %w", abi, err)
	}
	var scopes []string
	if cfg.Scoped&llsys.ScopeSignal != 0 {
		scopes = append(scopes, "signal")
	}
	if cfg.Scoped&llsys.ScopeAbstractUnixSocket != 0 {
		scopes = append(scopes, "abstract_unix_socket")
	}
	return scopes, nil
}

// errNoLandlock is a kernel without Landlock.
var errNoLandlock = errors.New("the kernel has no Landlock (or it is disabled)")
