// Package transcript owns a run's on-disk record: the transcript.jsonl event
// stream (schema 2) and the run directory around it.
//
// A transcript is JSON Lines. Every line is one object that starts with "ts"
// (UTC, ISO-8601 with offset and microseconds) and "event" (the event name),
// followed by that event's fields. The first line of a run is run_start, the
// last is run_end. The schema only ever grows: fields and events are added,
// never removed or renamed, so readers must tolerate names they do not know.
//
// Three roles share the event types in this package:
//   - [Writer] appends events; each line reaches the file in a single write
//     before Write returns, so a crash never leaves buffered events behind.
//   - [Read] and [ReadFile] parse a finished (or abandoned) transcript,
//     reporting damaged lines as [Problem] values instead of failing.
//   - [Follow] tails a transcript that is still being written, for live views.
//
// The package is a leaf: it imports nothing else from this module.
package transcript
