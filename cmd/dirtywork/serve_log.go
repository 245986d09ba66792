package main

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// lockedWriter is the server's stderr, written from every session's
// goroutine and the SSH libraries' loggers one write at a time (the
// neutralising writer under it keeps state between writes).
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.w.Write(p)
	if err != nil {
		return n, fmt.Errorf("write the server's log: %w", err)
	}
	return n, nil
}

// printf writes one time-stamped line. Lines quote what clients chose
// (user names): stderr neutralises them (see Main).
func (l *lockedWriter) printf(format string, args ...any) {
	_, _ = fmt.Fprintf(l, "%s %s\n", time.Now().UTC().Format(time.RFC3339), fmt.Sprintf(format, args...)) // nowhere else to report to
}
