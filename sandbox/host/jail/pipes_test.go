//go:build linux

package jail

import (
	"bufio"
	"io"
	"strings"
	"testing"
)

// TestPipes: the program's stdin, stdout and stderr are the host's pipes,
// kept apart, and stdin's end of file reaches it.
func TestPipes(t *testing.T) {
	j, err := Start(t.Context(), script(`while read -r line; do echo "out:$line"; echo "err:$line" >&2; done; echo eof`))
	if err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(j.Stdout)
	errs := bufio.NewReader(j.Stderr)
	for _, msg := range []string{"one", "two"} {
		if _, err := io.WriteString(j.Stdin, msg+"\n"); err != nil {
			t.Fatal(err)
		}
		if got, _ := out.ReadString('\n'); got != "out:"+msg+"\n" {
			t.Errorf("stdout %q", got)
		}
		if got, _ := errs.ReadString('\n'); got != "err:"+msg+"\n" {
			t.Errorf("stderr %q", got)
		}
	}
	if err := j.Stdin.Close(); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(out)
	if strings.TrimSpace(string(rest)) != "eof" {
		t.Errorf("after end of file: %q", rest)
	}
	if err := j.Wait(); err != nil {
		t.Errorf("wait: %v", err)
	}
}

// TestLargeSpec: a spec larger than the first message (a big environment)
// arrives whole.
func TestLargeSpec(t *testing.T) {
	big := strings.Repeat("x", 100<<10) // one string may hold 128 KiB
	cfg := script(`echo $(( ${#A} + ${#B} + ${#C} ))`)
	cfg.Env = append(cfg.Env, "A="+big, "B="+big, "C="+big)
	r := runJail(t, cfg)
	if r.err != nil || strings.TrimSpace(r.out) != "307200" {
		t.Errorf("%s", describe(r))
	}
}
