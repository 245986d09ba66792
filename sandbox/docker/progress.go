package docker

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/docker/docker/pkg/jsonmessage"
)

// ErrStreamFailed: a build or import reported a failure in its progress
// stream (an errorDetail message), such as a RUN step that exited non-zero.
// The message carries the daemon's text.
var ErrStreamFailed = errors.New("the daemon reported a failure")

// streamResult is what a progress stream told besides its text.
type streamResult struct {
	// ID is the image Id an aux message or an import's status reported, if
	// any.
	ID string
}

// copyProgress decodes the daemon's JSON message stream from r (the body
// of a build or import), writes each message to w as plain lines, and
// stops at the first errorDetail message, returning its text wrapped in
// ErrStreamFailed. Progress bars are not drawn: w is a log, not a
// terminal, so only their status lines are kept.
func copyProgress(r io.Reader, w io.Writer) (streamResult, error) {
	var res streamResult
	dec := json.NewDecoder(r)
	for {
		var m jsonmessage.JSONMessage
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return res, nil
			}
			return res, fmt.Errorf("read progress: %w", err)
		}
		if m.Error != nil {
			return res, fmt.Errorf("%w: %s", ErrStreamFailed, strings.TrimSpace(m.Error.Message))
		}
		if m.Aux != nil {
			var aux struct {
				ID string `json:"ID"`
			}
			if json.Unmarshal(*m.Aux, &aux) == nil && aux.ID != "" {
				res.ID = aux.ID
			}
			continue
		}
		writeMessage(w, m)
		// An import ends with its new image's Id as the bare status.
		if strings.HasPrefix(m.Status, "sha256:") && m.ID == "" {
			res.ID = m.Status
		}
	}
}

// writeMessage prints one progress message the way the docker CLI does
// on a non-terminal: build output verbatim, status lines with their
// layer ID in front.
func writeMessage(w io.Writer, m jsonmessage.JSONMessage) {
	switch {
	case m.Stream != "":
		fmt.Fprint(w, m.Stream)
	case m.Status != "":
		if m.Progress != nil && (m.Progress.Current > 0 || m.Progress.Total > 0) {
			// Per-chunk byte counts: a log gets the status lines around
			// them, not one line per chunk.
			return
		}
		if m.ID != "" {
			fmt.Fprintf(w, "%s: ", m.ID)
		}
		fmt.Fprintln(w, m.Status)
	}
}
