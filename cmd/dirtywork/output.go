package main

import (
	"fmt"
	"io"
	"os"

	"github.com/charmbracelet/x/term"

	"github.com/dirtywork/dirtywork/transcript/termsafe"
)

// What dirtywork prints quotes text the worker chose (task text echoed
// back, file names, diffs, assistant text, tool output) and text other
// programs chose (lane ids, branch names, a model server's model names).
// None of it reaches a terminal raw, whether or not the output is one:
// a pipe into `less -R`, a file later shown with cat, or a log read in a
// terminal act on escape sequences as a terminal does.
//
//   - JSON goes through writeJSON (termsafe.EncodeJSON): the characters a
//     terminal acts on are \uXXXX escapes, so it decodes to exactly the
//     same strings.
//   - Text quotes such values through safeLine (one line: a table cell, a
//     key: value) or safeText (a block that keeps its newlines and tabs:
//     a diff, a document), which show every control visibly.
//   - stderr as a whole goes through a termsafe.Writer (see Main).
//
// `runs show --raw` is the one way to get the worker's bytes unchanged.

// writeJSON prints v as one JSON line, without HTML escaping and with
// every character a terminal acts on escaped.
func writeJSON(w io.Writer, v any) error {
	if err := termsafe.WriteJSON(w, v); err != nil {
		return fmt.Errorf("write JSON result: %w", err)
	}
	return nil
}

// safeLine shows s on one line: controls, newlines and tabs included,
// visibly (termsafe.Line).
func safeLine(s string) string { return termsafe.Line(s) }

// safeText shows s as a block: newlines and tabs kept, every other
// control visibly (termsafe.String).
func safeText(s string) string { return termsafe.String(s) }

// isTerminal reports whether w is a terminal. It decides what runs
// (mission control needs one), never whether text is neutralised.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	return term.IsTerminal(f.Fd())
}
