package main

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// lockedWriter writes the server's lines from every session's goroutine
// one at a time.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	// Lines quote what clients chose (user names): stderr neutralises
	// them (see Main).
	fmt.Fprintf(l.w, "%s %s\n", time.Now().UTC().Format(time.RFC3339), fmt.Sprintf(format, args...))
}
