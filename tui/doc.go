// Package tui is mission control: a Bubble Tea dashboard that launches up
// to four runs as child processes, follows their transcripts live, shows
// each diff for review and records verdicts. Nothing imports it but the
// command.
package tui
