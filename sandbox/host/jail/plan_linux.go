package jail

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// maxFDs bounds the mount descriptors passed to the child (SCM_RIGHTS
// takes at most 253 in one message).
const maxFDs = 200

// systemDirs are bound read-only: what toolchains need of the host.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"}

// etcSecrets are covered in the jail's /etc: password hashes, sudo rules,
// host keys, stored credentials. etcSecretGlobs are patterns of more.
var (
	etcSecrets = []string{
		"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-",
		"/etc/sudoers", "/etc/sudoers.d", "/etc/security/opasswd",
		"/etc/ssl/private", "/etc/pki/tls/private", "/etc/krb5.keytab",
		"/etc/NetworkManager/system-connections", "/etc/wireguard", "/etc/openvpn",
		"/etc/ipsec.secrets", "/etc/ipsec.d/private", "/etc/ppp/chap-secrets", "/etc/ppp/pap-secrets",
		"/etc/docker/key.json", "/etc/docker/certs.d", "/etc/containerd/certs.d",
		"/etc/letsencrypt", "/etc/credstore", "/etc/credstore.encrypted",
		"/etc/libvirt/secrets", "/etc/cups/ssl", "/etc/ldap.secret", "/etc/pam_ldap.secret",
	}
	etcSecretGlobs = []string{"/etc/ssh/ssh_host_*"}
)

// planRoot computes the entries that build the jail's root from cfg,
// resolving every host path here, in the parent: the child sees only the
// result. ro lists what is bound read-only and hidden what is covered,
// for Info.
func planRoot(cfg Config) (entries []entry, ro, hidden []string, err error) {
	for _, d := range systemDirs {
		fi, err := os.Lstat(d)
		if err != nil {
			continue
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			// Merged /usr: /bin -> usr/bin stays a link, to the bound /usr.
			link, err := os.Readlink(d)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("read the link %s: %w", d, err)
			}
			entries = append(entries, entry{Kind: entrySymlink, Target: d, Link: link, FD: -1})
		case fi.IsDir():
			entries = append(entries, entry{Kind: entryBind, Target: d, Source: d, Dir: true, ReadOnly: true, Recursive: true, FD: -1})
			ro = append(ro, d)
		}
	}
	secrets := append([]string(nil), etcSecrets...)
	for _, g := range etcSecretGlobs {
		m, _ := filepath.Glob(g) // the patterns are valid
		secrets = append(secrets, m...)
	}
	for _, p := range secrets {
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&fs.ModeSymlink != 0 {
			continue // absent; a link's target is either outside /etc or covered itself
		}
		entries = append(entries, entry{Kind: entryMask, Target: p, Dir: fi.IsDir(), FD: -1})
	}
	if cfg.AllowNetwork {
		// Name resolution: a resolv.conf that links out of /etc (to
		// systemd-resolved's under /run) is bound at its target.
		if target, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil && !underAny(target, systemDirs) {
			entries = append(entries, entry{Kind: entryBind, Target: target, Source: target, ReadOnly: true, FD: -1})
		}
	}
	for _, list := range []struct {
		paths []string
		idmap bool
	}{{cfg.ReadOnlyPaths, true}, {cfg.UnmappedPaths, false}} {
		for _, p := range list.paths {
			e, ok, err := planReadOnly(p, list.idmap)
			if err != nil {
				return nil, nil, nil, err
			}
			if ok {
				entries = append(entries, e)
				ro = append(ro, e.Target)
			}
		}
	}
	for _, m := range cfg.Mounts {
		e, err := planMount(m)
		if err != nil {
			return nil, nil, nil, err
		}
		entries = append(entries, e)
	}
	binds := 0
	for _, e := range entries {
		if e.Kind == entryBind {
			binds++
		}
	}
	if binds > maxFDs {
		return nil, nil, nil, fmt.Errorf("%d binds is more than the %d a jail takes", binds, maxFDs)
	}
	// Covers come last, over what the binds show.
	for _, p := range cfg.Hidden {
		e, ok, err := planHidden(p, entries)
		if err != nil {
			return nil, nil, nil, err
		}
		if ok {
			entries = append(entries, e)
			hidden = append(hidden, e.Target)
		}
	}
	return entries, ro, hidden, nil
}

// planReadOnly resolves a read-only path; ok is false when there is
// nothing to bind (no such path, or one a system directory shows).
func planReadOnly(p string, idmap bool) (entry, bool, error) {
	if !filepath.IsAbs(p) {
		return entry{}, false, fmt.Errorf("read-only path %q is not absolute", p)
	}
	p = filepath.Clean(p)
	src, err := filepath.EvalSymlinks(p)
	if errors.Is(err, fs.ErrNotExist) {
		return entry{}, false, nil
	}
	if err != nil {
		return entry{}, false, fmt.Errorf("resolve read-only path %s: %w", p, err)
	}
	if underAny(p, systemDirs) && p == src {
		return entry{}, false, nil // visible already, through its system directory
	}
	fi, err := os.Stat(src)
	if err != nil {
		return entry{}, false, fmt.Errorf("read-only path %s: %w", p, err)
	}
	return entry{Kind: entryBind, Target: p, Source: src, Dir: fi.IsDir(), ReadOnly: true, Recursive: true, IDMap: idmap, FD: -1}, true, nil
}

// planHidden finds where host path p shows in the jail, through the last
// bind whose source holds it (a later bind covers an earlier one): the
// cover goes there, on a path with no symlink past the bind's target, so
// the child cannot be led anywhere else. ok is false when p is not there
// or no bind shows it.
func planHidden(p string, entries []entry) (entry, bool, error) {
	if !filepath.IsAbs(p) {
		return entry{}, false, fmt.Errorf("hidden path %q is not absolute", p)
	}
	src, err := filepath.EvalSymlinks(p)
	if errors.Is(err, fs.ErrNotExist) {
		return entry{}, false, nil
	}
	if err != nil {
		return entry{}, false, fmt.Errorf("resolve hidden path %s: %w", p, err)
	}
	fi, err := os.Lstat(src)
	if err != nil {
		return entry{}, false, fmt.Errorf("hidden path %s: %w", p, err)
	}
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		if e.Kind != entryBind || !under(src, e.Source) {
			continue
		}
		rel, err := filepath.Rel(e.Source, src)
		if err != nil {
			return entry{}, false, fmt.Errorf("hidden path %s: %w", p, err)
		}
		return entry{Kind: entryMask, Target: filepath.Join(e.Target, rel), Dir: fi.IsDir(), FD: -1}, true, nil
	}
	return entry{}, false, nil
}

// planMount checks one configured mount and resolves its source.
func planMount(m Mount) (entry, error) {
	if !filepath.IsAbs(m.Target) || filepath.Clean(m.Target) == "/" {
		return entry{}, fmt.Errorf("mount target %q is not an absolute path below /", m.Target)
	}
	if m.Source == "" {
		return entry{}, fmt.Errorf("mount at %s has no source", m.Target)
	}
	src, err := filepath.EvalSymlinks(m.Source)
	if err != nil {
		return entry{}, fmt.Errorf("mount source %s: %w", m.Source, err)
	}
	fi, err := os.Stat(src)
	if err != nil {
		return entry{}, fmt.Errorf("mount source %s: %w", m.Source, err)
	}
	if !fi.IsDir() && !fi.Mode().IsRegular() {
		return entry{}, fmt.Errorf("mount source %s is neither a file nor a directory", m.Source)
	}
	return entry{
		Kind: entryBind, Target: filepath.Clean(m.Target), Source: src, Dir: fi.IsDir(),
		// A read-only bind takes the mounts beneath along, read-only too; a
		// writable one does not, so nothing mounted inside a worktree
		// becomes writable with it.
		ReadOnly: m.ReadOnly, Recursive: m.ReadOnly, IDMap: true, FD: -1,
	}, nil
}

// under reports whether p is dir or inside it.
func under(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// underAny reports whether p is one of dirs or inside one.
func underAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if under(p, d) {
			return true
		}
	}
	return false
}
