package bench

import "github.com/dirtywork/dirtywork/transcript"

// LiveVerdicts is the VerdictLookup over the runs root: the verdict and
// review seconds the run's run.json holds now, so a verdict given after
// the sweep shows at once (B-10). A slug that breaks the slug rule or
// leaves the runs root, a run that is gone, and a run.json that is not a
// JSON object all fall back to the row's own values.
//
// The record is read untyped (transcript.ReadRecord, the file reader
// behind ReadRun): the original prints review_seconds as written, 60.0
// and 60 alike, which the typed record's float no longer tells apart.
func LiveVerdicts(runsRoot string) VerdictLookup {
	return func(slug string) (any, any, bool) {
		dir, err := transcript.RunDirPath(runsRoot, slug)
		if err != nil {
			return nil, nil, false
		}
		rec, err := transcript.ReadRecord(dir)
		if err != nil {
			return nil, nil, false
		}
		return rec["verdict"], rec["review_seconds"], true
	}
}
