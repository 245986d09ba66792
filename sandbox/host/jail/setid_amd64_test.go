//go:build linux && amd64

package jail

import (
	"path/filepath"

	"golang.org/x/sys/unix"
)

// legacySetIDCalls are the x86-64 calls arm64 does not have.
func legacySetIDCalls(dir string, plain func(string) string) []call {
	return []call{
		{"chmod_suid", func() error {
			_, err := sys(unix.SYS_CHMOD, path(plain("chmod")), 0o4755)
			return err
		}},
		{"open_creat_suid", closing(unix.SYS_OPEN, path(filepath.Join(dir, "open")), unix.O_CREAT|unix.O_WRONLY, 0o4755)},
		{"open_tmpfile_sgid", closing(unix.SYS_OPEN, path(dir), unix.O_TMPFILE|unix.O_WRONLY, 0o2755)},
		{"creat_suid", closing(unix.SYS_CREAT, path(filepath.Join(dir, "creat")), 0o4755)},
		{"mkdir_sgid", func() error {
			_, err := sys(unix.SYS_MKDIR, path(filepath.Join(dir, "mkdir")), 0o2755)
			return err
		}},
		{"mknod_reg_suid", func() error {
			_, err := sys(unix.SYS_MKNOD, path(filepath.Join(dir, "mknod")), unix.S_IFREG|0o4755, 0)
			return err
		}},
	}
}
