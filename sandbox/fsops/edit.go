package fsops

import (
	"fmt"
	"io/fs"
	"strings"
	"unicode/utf8"
)

// Edit is one exact replacement of apply_edits: Old, which must occur
// exactly once in the text as it stands at its turn, becomes New.
type Edit struct {
	Old string `json:"old"`
	New string `json:"new"`
}

// EditFile is the edit_file tool (E-31): it replaces the one occurrence of
// oldString in the file at path with newString. Any other number of
// occurrences is refused and nothing is written. An empty oldString occurs
// once only in an empty file, where the edit sets the file's text.
func (f *FS) EditFile(path, oldString, newString string) (string, error) {
	return f.rewrite(path, "edit_file", "Edited", func(text string) (string, error) {
		if n := strings.Count(text, oldString); n != 1 {
			return "", failf("old_string occurs %d times in %s; it must occur exactly once. Include more surrounding context to make it unique.", n, path)
		}
		return strings.Replace(text, oldString, newString, 1), nil
	})
}

// InsertText is the insert_before (after=false) and insert_after
// (after=true) tools (E-31): text, given a final newline if it lacks one,
// goes in as whole lines before the line holding anchor's first character
// or after the line holding its last, leaving the anchor's lines as they
// were. The anchor must occur exactly once.
func (f *FS) InsertText(path, anchor, text string, after bool) (string, error) {
	tool := "insert_before"
	if after {
		tool = "insert_after"
	}
	return f.rewrite(path, tool, "Inserted into", func(content string) (string, error) {
		if n := strings.Count(content, anchor); n != 1 {
			return "", failf("anchor occurs %d times in %s; it must occur exactly once. Include more surrounding context to make it unique.", n, path)
		}
		return insertLines(content, anchor, text, after), nil
	})
}

// insertLines places insert around the one occurrence of anchor in text.
func insertLines(text, anchor, insert string, after bool) string {
	if !strings.HasSuffix(insert, "\n") {
		insert += "\n"
	}
	start := strings.Index(text, anchor)
	if !after {
		lineStart := strings.LastIndexByte(text[:start], '\n') + 1
		return text[:lineStart] + insert + text[lineStart:]
	}
	// The anchor's last byte; an empty anchor has none and stands for the
	// character at its position.
	last := max(start, start+len(anchor)-1)
	nl := strings.IndexByte(text[last:], '\n')
	if nl < 0 {
		// The anchor is on a last line with no newline: end that line
		// first, so the inserted text starts a line of its own.
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		return text + insert
	}
	cut := last + nl + 1
	return text[:cut] + insert + text[cut:]
}

// ApplyEdits is the apply_edits tool (E-31): the edits apply in order,
// each to the text the ones before it left, and each Old must occur
// exactly once at its turn. The first edit that cannot apply refuses the
// whole batch and nothing is written.
func (f *FS) ApplyEdits(path string, edits []Edit) (string, error) {
	total := len(edits)
	verb := fmt.Sprintf("Applied %d edits to", total)
	if total == 1 {
		verb = "Applied 1 edit to"
	}
	return f.rewrite(path, "apply_edits", verb, func(text string) (string, error) {
		for i, e := range edits {
			nth := i + 1
			if e.Old == "" {
				return "", failf("edit %d of %d: old text is empty; no edits applied", nth, total)
			}
			switch n := strings.Count(text, e.Old); {
			case n == 0:
				applied := ""
				if nth > 1 {
					applied = fmt.Sprintf(" (after edits 1..%d are applied)", nth-1)
				}
				return "", failf("edit %d of %d: old text occurs 0 times in %s; it must occur exactly once%s; no edits applied",
					nth, total, path, applied)
			case n > 1:
				return "", failf("edit %d of %d: old text occurs %d times in %s; it must occur exactly once. Include more surrounding context to make it unique; no edits applied",
					nth, total, n, path)
			}
			text = strings.Replace(text, e.Old, e.New, 1)
		}
		return text, nil
	})
}

// rewrite is the read → transform → write every in-place tool shares
// (E-31). change returns the new text, or a tool failure to refuse; a
// refusal, like every failure before the write, leaves the file as it was.
// The write itself truncates in place, as write_file's does.
func (f *FS) rewrite(path, tool, verb string, change func(text string) (string, error)) (string, error) {
	rel, err := f.Resolve(path, true)
	if err != nil {
		return toolResult("", resolveFailure("read", path, err))
	}
	// The write would refuse a symlink at rel anyway; saying so before
	// reading through it spares the model a transform that cannot land.
	if fi, err := f.root.Lstat(rel); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return toolResult("", symlinkRefusal(path))
	}
	data, err := f.readRegular(path, rel)
	if err != nil {
		return toolResult("", err)
	}
	if !utf8.Valid(data) {
		return fmt.Sprintf("ERROR: %s is not valid UTF-8 text; %s only works on text files", path, tool), nil
	}
	before := string(data)
	after, err := change(before)
	if err != nil {
		return toolResult("", err)
	}
	if len(after) > maxFileBytes {
		return fmt.Sprintf("ERROR: result is %d bytes, over the %d-byte write limit; nothing was written", len(after), maxFileBytes), nil
	}
	if err := f.writeRegular(path, rel, after); err != nil {
		return toolResult("", err)
	}
	return DescribeChange(verb, path, before, after), nil
}
