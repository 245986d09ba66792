package docker

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// mountsUnder lists the mount points strictly inside dir, from this
// process's mount table. Removing or archiving a directory with a mount
// inside would reach into the mounted file system (debootstrap mounts the
// host's /proc and /sys, and may bind /dev, into its target).
func mountsUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("read the mount table: %w", err)
	}
	defer func() { _ = f.Close() }() // read-only
	return parseMountsUnder(f, dir)
}

// parseMountsUnder is mountsUnder's parser, reading mountinfo from f. The
// mount point is the fifth field, with space, tab, newline and backslash
// escaped in octal.
func parseMountsUnder(f io.Reader, dir string) ([]string, error) {
	prefix := filepath.Clean(dir)
	if !strings.HasSuffix(prefix, string(filepath.Separator)) { // only "/" has one
		prefix += string(filepath.Separator)
	}
	var inside []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMountinfo(fields[4])
		if strings.HasPrefix(mp, prefix) {
			inside = append(inside, mp)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read the mount table: %w", err)
	}
	return inside, nil
}

// unescapeMountinfo undoes the kernel's octal escapes (\040 for a space).
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
