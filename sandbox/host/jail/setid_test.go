//go:build linux

package jail

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// sys makes a system call and returns its result or errno.
func sys(nr uintptr, a ...uintptr) (uintptr, error) {
	var args [6]uintptr
	copy(args[:], a)
	r, _, e := unix.Syscall6(nr, args[0], args[1], args[2], args[3], args[4], args[5])
	if e != 0 {
		return 0, e
	}
	return r, nil
}

// closing is a call that returns a descriptor, closed if it got one.
func closing(nr uintptr, a ...uintptr) func() error {
	return func() error {
		fd, err := sys(nr, a...)
		if err == nil {
			_ = unix.Close(int(fd))
		}
		return err
	}
}

// setIDCalls are the ways a program could give a file in dir the setuid
// or setgid bit, each made as the system call itself (no libc in between
// to fall back or refuse first). Every one must fail; openat2 with ENOSYS,
// the rest with EPERM. Each works on a file of its own, made first
// without the bits.
func setIDCalls(dir string) []call {
	plain := func(name string) string {
		p := filepath.Join(dir, name)
		_ = os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755)
		return p
	}
	tmpfileThenLink := func(mode uint32, chmod uint32) func() error {
		return func() error {
			fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_WRONLY, mode)
			if err != nil {
				return err
			}
			defer func() { _ = unix.Close(fd) }()
			var cerr error
			if chmod != 0 {
				cerr = unix.Fchmod(fd, chmod)
			}
			// Linked into the tree either way: what lands there is what
			// the walk on the host checks.
			name := fmt.Sprintf("tmpfile-%o-%o", mode, chmod)
			_ = unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", fd), unix.AT_FDCWD, filepath.Join(dir, name), unix.AT_SYMLINK_FOLLOW)
			return cerr
		}
	}
	calls := []call{
		{"fchmod_suid", func() error {
			f, err := os.Open(plain("fchmod"))
			if err != nil {
				return err
			}
			defer func() { _ = f.Close() }()
			return unix.Fchmod(int(f.Fd()), 0o4755)
		}},
		{"fchmodat_suid", func() error {
			_, err := sys(unix.SYS_FCHMODAT, atFDCWD, path(plain("fchmodat")), 0o4755)
			return err
		}},
		{"fchmodat_sgid_hibits", func() error {
			_, err := sys(unix.SYS_FCHMODAT, atFDCWD, path(plain("fchmodat-hi")), hiBits|0o2755)
			return err
		}},
		{"fchmodat2_suid", func() error {
			_, err := sys(unix.SYS_FCHMODAT2, atFDCWD, path(plain("fchmodat2")), 0o6755, 0)
			return err
		}},
		{"openat_creat_suid", closing(unix.SYS_OPENAT, atFDCWD, path(filepath.Join(dir, "openat")), unix.O_CREAT|unix.O_WRONLY, 0o4755)},
		{"openat_creat_sgid", closing(unix.SYS_OPENAT, atFDCWD, path(filepath.Join(dir, "openat-sgid")), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY, 0o2755)},
		{"openat_tmpfile_suid", tmpfileThenLink(0o4755, 0)},
		{"tmpfile_then_fchmod", tmpfileThenLink(0o755, 0o4755)},
		{"openat2_creat_suid", func() error {
			fd, err := unix.Openat2(unix.AT_FDCWD, filepath.Join(dir, "openat2"), &unix.OpenHow{Flags: unix.O_CREAT | unix.O_WRONLY, Mode: 0o4755})
			if err == nil {
				_ = unix.Close(fd)
			}
			return err
		}},
		{"mkdirat_sgid", func() error {
			_, err := sys(unix.SYS_MKDIRAT, atFDCWD, path(filepath.Join(dir, "mkdirat")), 0o2755)
			return err
		}},
		{"mkdirat_suid", func() error {
			_, err := sys(unix.SYS_MKDIRAT, atFDCWD, path(filepath.Join(dir, "mkdirat-suid")), 0o4755)
			return err
		}},
		{"mknodat_reg_suid", func() error {
			_, err := sys(unix.SYS_MKNODAT, atFDCWD, path(filepath.Join(dir, "mknodat")), unix.S_IFREG|0o4755, 0)
			return err
		}},
		{"mknodat_reg_sgid", func() error {
			_, err := sys(unix.SYS_MKNODAT, atFDCWD, path(filepath.Join(dir, "mknodat-sgid")), unix.S_IFREG|0o2755, 0)
			return err
		}},
		{"setxattr_capability", func() error {
			return unix.Setxattr(plain("setcap"), "security.capability", vfsCapRaw(), 0)
		}},
	}
	return append(calls, legacySetIDCalls(dir, plain)...)
}

// setIDCommands are the same attempts as a worker would type them.
const setIDCommands = `touch a b c && mkdir d e
chmod 4755 a; chmod u+s b; chmod g+s c; chmod 2755 d; chmod u+s,g+s e
install -m 4755 /bin/true installed; install -d -m 2755 installed-dir
mkdir -m 2775 mkdir-sgid
cp -p /bin/true cp-plain && chmod 6755 cp-plain
python3 -c "import os; os.close(os.open('py-open', os.O_CREAT|os.O_WRONLY, 0o4755)); os.chmod('a', 0o6755); os.mkdir('py-dir', 0o2755)"
tar -cf t.tar --mode=6755 a && mkdir x && tar -xpf t.tar -C x
setcap cap_net_raw+ep a
python3 -c "import os; os.setxattr('a', 'security.capability', bytes([1,0,0,2,0,32,0,0,0,0,0,0,0,0,0,0,0,0,0,0]))"
chmod 755 a && chmod 1777 d && echo plain-modes-ok`

// TestEscapeSetIDFiles: nothing the program does in a writable mount
// leaves a setuid or setgid file (or a file capability) on the host, by
// any call or any command; plain modes still work.
func TestEscapeSetIDFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "calls"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Mounts: []Mount{{Source: dir, Target: "/work"}}, Dir: "/work"}
	got := helper(t, cfg, "setid", "/work/calls")
	for _, c := range setIDCalls(filepath.Join(t.TempDir(), "names")) {
		want := "EPERM"
		if c.name == "openat2_creat_suid" {
			want = "ENOSYS"
		}
		if got[c.name] != want {
			t.Errorf("%s: got %q, want %s", c.name, got[c.name], want)
		}
	}
	r := bash(t, cfg, setIDCommands)
	if !strings.Contains(r.out, "plain-modes-ok") {
		t.Errorf("plain modes failed:\n%s", describe(r))
	}
	if bad := setIDFiles(t, dir); len(bad) > 0 {
		t.Errorf("setuid, setgid or capable files on the host:\n%s\n%s", strings.Join(bad, "\n"), describe(r))
	}
}

// setIDFiles lists, under dir on the host, every entry with the setuid or
// setgid bit or a security.capability attribute.
func setIDFiles(t *testing.T, dir string) []string {
	t.Helper()
	var bad []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		if st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
			bad = append(bad, fmt.Sprintf("%s mode %o", p, st.Mode))
		}
		if d.Type()&fs.ModeSymlink == 0 {
			if _, err := unix.Lgetxattr(p, "security.capability", nil); err == nil {
				bad = append(bad, p+" has security.capability")
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return bad
}
