package confine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// abiConfigs are go-landlock's presets by ABI version, index 0 = V1. The
// launcher enforces the one the policy names, never a best-effort subset.
var abiConfigs = []landlock.Config{
	landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5, landlock.V6,
	landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11,
}

// MaxABI is the highest Landlock ABI this build can enforce.
func MaxABI() int { return len(abiConfigs) }

// KernelABI is the Landlock ABI the running kernel supports, 0 when it has
// no Landlock or it is disabled.
func KernelABI() int {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil || v < 0 {
		return 0
	}
	return v
}

// storeAccess is the Store access: see its doc.
const storeAccess = llsys.AccessFSExecute | llsys.AccessFSReadFile | llsys.AccessFSReadDir |
	llsys.AccessFSWriteFile | llsys.AccessFSTruncate | llsys.AccessFSMakeReg | llsys.AccessFSMakeDir |
	llsys.AccessFSRemoveFile | llsys.AccessFSRefer

// configFor is the Landlock configuration for abi: every filesystem access
// right and IPC scope it knows. Network access is not confined: builds and
// package managers need it, and the sandbox does not promise otherwise.
func configFor(abi int) (landlock.Config, error) {
	if abi < 1 || abi > len(abiConfigs) {
		return landlock.Config{}, fmt.Errorf("unsupported Landlock ABI %d (this build knows 1 to %d)", abi, len(abiConfigs))
	}
	v := abiConfigs[abi-1]
	return landlock.Config{HandledAccessFS: v.HandledAccessFS, Scoped: v.Scoped}, nil
}

// enforce builds the policy's ruleset and enforces it on the calling
// thread, which must be locked to its goroutine and must exec bash next.
func enforce(p Policy) error {
	cfg, err := configFor(p.ABI)
	if err != nil {
		return err
	}
	rules, err := landlockRules(cfg, p.Rules)
	if err != nil {
		return err
	}
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return fmt.Errorf("create ruleset: %w", err)
	}
	if fd < 0 {
		return errors.New("create ruleset: nothing to enforce")
	}
	// Once enforced (or refused), the ruleset descriptor is of no further use.
	defer func() { _ = unix.Close(fd) }()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	if err := llsys.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("enforce ruleset: %w", err)
	}
	return nil
}

// landlockRules turns the policy's rules into go-landlock rules. Landlock
// refuses directory rights on a file, so the rights depend on what the
// path is.
func landlockRules(cfg landlock.Config, rules []Rule) ([]landlock.Rule, error) {
	refer := cfg.HandledAccessFS&llsys.AccessFSRefer != 0
	out := make([]landlock.Rule, 0, len(rules))
	for _, r := range rules {
		fi, err := os.Stat(r.Path)
		if err != nil {
			if r.Optional && errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("rule for %s: %w", r.Path, err)
		}
		dir := fi.IsDir()
		var rule landlock.FSRule
		switch {
		case r.Access == Read && dir:
			rule = landlock.RODirs(r.Path)
		case r.Access == Read:
			rule = landlock.ROFiles(r.Path)
		case r.Access == Write && dir:
			rule = landlock.RWDirs(r.Path)
			if refer { // moving entries between directories of the tree
				rule = rule.WithRefer()
			}
		case r.Access == Write || r.Access == Device:
			rule = landlock.RWFiles(r.Path).WithIoctlDev()
		case r.Access == Store && dir:
			rule = landlock.PathAccess(landlock.AccessFSSet(storeAccess)&cfg.HandledAccessFS, r.Path)
		default:
			return nil, fmt.Errorf("rule for %s: access %q does not apply to this kind of file", r.Path, r.Access)
		}
		if r.Optional {
			rule = rule.IgnoreIfMissing()
		}
		out = append(out, rule)
	}
	return out, nil
}
