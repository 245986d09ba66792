package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/dirtywork/dirtywork/transcript"
)

// toolboxSumName is the file, in the dirtywork home, that remembers the
// hash of the last tool server hashed from a path, by what stat says of
// the file: hashing a build costs tens of milliseconds of a busy
// machine's CPU on every run's way to its first tool call. A file that
// changed has another inode, size, modification or change time (the
// change time no one but the kernel sets), so its old hash is never
// taken for it. Whatever the hash names is still checked against what
// the volume holds, and a fill hashes the bytes it uploads.
const toolboxSumName = "toolbox.sum"

// statLine is what the sum file keys a hash by: path, device, inode,
// size, modification and change times.
func statLine(path string) (string, bool) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return "", false
	}
	return fmt.Sprintf("%d %d %d %d.%d %d.%d %s", st.Dev, st.Ino, st.Size,
		st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec, path), true
}

// rememberedKey is the hash the sum file holds for path as it is now
// (size its length), or false.
func rememberedKey(path string) (key string, size int64, ok bool) {
	home, err := transcript.Home()
	if err != nil {
		return "", 0, false
	}
	line, ok := statLine(path)
	if !ok {
		return "", 0, false
	}
	b, err := os.ReadFile(filepath.Join(home, toolboxSumName))
	if err != nil || len(b) > 8<<10 {
		return "", 0, false
	}
	k, rest, found := strings.Cut(strings.TrimSuffix(string(b), "\n"), " ")
	if !found || rest != line || len(k) != 64 {
		return "", 0, false
	}
	if _, err := fmt.Sscanf(line, "%d %d %d", new(uint64), new(uint64), &size); err != nil {
		return "", 0, false
	}
	return k, size, true
}

// rememberKey writes key for path into the sum file, if the home is
// there and path is still as stat said (before) when it was hashed; a
// failure only costs the next run a hash.
func rememberKey(path, key, before string) {
	home, err := transcript.Home()
	if err != nil {
		return
	}
	line, ok := statLine(path)
	if !ok || line != before {
		return
	}
	tmp, err := os.CreateTemp(home, toolboxSumName+".*")
	if err != nil {
		return
	}
	_, werr := tmp.WriteString(key + " " + line + "\n")
	if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), filepath.Join(home, toolboxSumName)) != nil {
		_ = os.Remove(tmp.Name())
	}
}
