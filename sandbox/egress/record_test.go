package egress

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

func TestRecorder(t *testing.T) {
	path := filepath.Join(t.TempDir(), LogName)
	r, err := OpenRecorder(path)
	if err != nil {
		t.Fatal(err)
	}
	r.Record(Decision{Decision: Allowed, Method: "CONNECT", Host: "registry.npmjs.org", Port: 443, Addr: "104.16.0.1:443"})
	r.Record(Decision{Decision: Refused, Method: "CONNECT", Host: "169.254.169.254", Port: 80, Reason: "link-local"})
	r.Record(Decision{Decision: Refused, Method: "GET", Host: "169.254.169.254", Port: 80, Reason: "link-local"})
	r.Record(Decision{Decision: Failed, Method: "CONNECT", Host: "pypi.org", Port: 443, Reason: "timeout"})
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	s := r.Summary()
	if s.Allowed != 1 || s.Refused != 2 || s.Failed != 1 || s.Log != path || s.LogTruncated {
		t.Fatalf("summary %+v", s)
	}
	if !slices.Equal(s.RefusedHosts, []string{"169.254.169.254:80"}) {
		t.Fatalf("refused hosts %q", s.RefusedHosts)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var lines []Decision
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var d Decision
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		lines = append(lines, d)
	}
	if len(lines) != 4 || lines[1].Reason != "link-local" || lines[0].Addr != "104.16.0.1:443" {
		t.Fatalf("log %+v", lines)
	}
	// Recording after Close still counts.
	r.Record(Decision{Decision: Allowed})
	if r.Summary().Allowed != 2 {
		t.Fatal("a decision after Close was not counted")
	}
}

func TestRecorderBounds(t *testing.T) {
	path := filepath.Join(t.TempDir(), LogName)
	r, err := OpenRecorder(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	r.written = MaxLogBytes - 10 // as if the log were nearly full
	for i := range MaxRefusedHosts + 20 {
		r.Record(Decision{Decision: Refused, Host: "h" + strconv.Itoa(i) + ".example", Port: 443})
	}
	s := r.Summary()
	if s.Refused != MaxRefusedHosts+20 || len(s.RefusedHosts) != MaxRefusedHosts || !s.LogTruncated {
		t.Fatalf("summary: refused %d, %d hosts, truncated %v", s.Refused, len(s.RefusedHosts), s.LogTruncated)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Fatalf("the log grew past its cap: %v %v", fi, err)
	}
}
