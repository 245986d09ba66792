package seal

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// markTimeout bounds how long Mark waits for the file systems' clock to
// move on.
const markTimeout = 2 * time.Second

// Mark returns a baseline time for the kernel that stamps the files in
// dir: the change time of a file made there now, once a file made later
// gets a later one. Every change made before Mark was called has a change
// time at or before it, every change made after it returns one after it,
// whatever the granularity of the file system's clock (often a scheduler
// tick). It makes and removes small files in dir.
func Mark(dir string) (time.Time, error) {
	first, err := stampIn(dir)
	if err != nil {
		return time.Time{}, err
	}
	deadline := time.Now().Add(markTimeout)
	for {
		next, err := stampIn(dir)
		if err != nil {
			return time.Time{}, err
		}
		if next.After(first) {
			return first, nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, errors.New("seal: the file system's clock does not move")
		}
		time.Sleep(time.Millisecond) // the clock's tick, not an event anyone sends
	}
}

// stampIn makes a file in dir and returns its change time.
func stampIn(dir string) (time.Time, error) {
	f, err := os.CreateTemp(dir, ".dirtywork-mark-*")
	if err != nil {
		return time.Time{}, fmt.Errorf("seal: mark the baseline: %w", err)
	}
	name := f.Name()
	defer func() { _ = os.Remove(name) }()
	defer func() { _ = f.Close() }() // empty, never written
	return fileCtime(f)
}
