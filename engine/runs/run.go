package runs

import (
	"github.com/dirtywork/dirtywork/transcript"
)

// Status is a run's status (transcript owns the list).
type Status = transcript.Status

// Verdict is a reviewer's judgement of a run (transcript owns the list).
type Verdict = transcript.Verdict

// Run is one run of the store: where it lives, its record, and whether
// its process is alive.
type Run struct {
	// Slug names the run; Dir is its run directory.
	Slug, Dir string
	// Record is run.json, typed. It is the zero record when Err is set.
	Record transcript.RunRecord
	// Err is set when run.json cannot be read or is not a JSON object;
	// such a run is listed all the same, so it can be cleaned.
	Err error
	// Warning names run.json keys whose values had the wrong type.
	Warning string
	// Alive is true only while the run's process holds its liveness lock.
	Alive bool
	// Leftovers is what exists of the run outside its run dir; List fills
	// it when asked to.
	Leftovers *Leftovers
	// stamp is run.json's size and mtime as read, for Watch.
	stamp fileStamp
}

// Crashed reports a run recorded as running whose process is gone.
func (r *Run) Crashed() bool {
	return r.Err == nil && r.Record.Status == transcript.StatusRunning && !r.Alive
}

// Str returns s's value, or "" for nil.
func Str(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// fileStamp tells whether a file changed between two reads.
type fileStamp struct {
	size  int64
	mtime int64
	ino   uint64
}

// readRecord reads and decodes <dir>/run.json (transcript.ReadRun).
func readRecord(dir string) (rec transcript.RunRecord, warning string, stamp fileStamp, err error) {
	rf, err := transcript.ReadRun(dir)
	if err != nil {
		return transcript.RunRecord{}, "", stamp, err
	}
	return rf.Record, rf.Warning, fileStamp{size: rf.Size, mtime: rf.ModTime, ino: rf.Ino}, nil
}
