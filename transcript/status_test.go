package transcript

import (
	"testing"
	"time"
)

func TestRecordTimesReadInEveryFormTheirWritersUsed(t *testing.T) {
	want := time.Date(2026, 3, 4, 5, 6, 7, 123456000, time.UTC)
	if got := FormatTime(want.In(time.FixedZone("x", 3600))); got != "2026-03-04T05:06:07.123456+00:00" {
		t.Fatalf("FormatTime = %q", got)
	}
	for _, s := range []string{
		"2026-03-04T05:06:07.123456+00:00", // ours
		"2026-03-04T05:06:07.123456Z",      // RFC 3339
		"2026-03-04T06:06:07.123456+01:00", // another offset
		"2026-03-04T05:06:07.123456",       // the original's naive form, UTC
		"2026-03-04 05:06:07.123456",       // isoformat(" ")
		" 2026-03-04T05:06:07.123456+00:00\n",
	} {
		got, err := ParseTime(s)
		if err != nil || !got.Equal(want) {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	if got, err := ParseTime("2026-03-04T05:06:07"); err != nil || !got.Equal(want.Truncate(time.Second)) {
		t.Errorf("no fraction: %v %v", got, err)
	}
	for _, bad := range []string{"", "  ", "yesterday", "2026-13-01T00:00:00"} {
		if _, err := ParseTime(bad); err == nil {
			t.Errorf("ParseTime(%q) accepted", bad)
		}
	}
}

func TestParseVerdict(t *testing.T) {
	for _, v := range []Verdict{VerdictAccept, VerdictReject, VerdictCleanup} {
		if got, err := ParseVerdict(string(v)); err != nil || got != v {
			t.Errorf("ParseVerdict(%q) = %q, %v", v, got, err)
		}
	}
	if _, err := ParseVerdict("Accept"); err == nil {
		t.Error("a verdict is exact")
	}
}

func TestAStatusInAMemoryRecordReadsAsAString(t *testing.T) {
	r := Record{"status": StatusCompleted, "verdict": VerdictReject}
	if s, ok := r.String("status"); !ok || s != "completed" {
		t.Errorf("status %q %v", s, ok)
	}
	if s, ok := r.String("verdict"); !ok || s != "reject" {
		t.Errorf("verdict %q %v", s, ok)
	}
}
