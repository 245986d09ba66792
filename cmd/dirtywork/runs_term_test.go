//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/dirtywork/dirtywork/transcript"
)

// openPTY returns a pseudo-terminal pair: what is written to tty can be
// read from pt.
func openPTY(t *testing.T) (pt, tty *os.File) {
	t.Helper()
	pt, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("no pseudo-terminals here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(pt.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(pt.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pt.Close(); _ = tty.Close() })
	return pt, tty
}

// hostile is worker-controlled text with every kind of terminal trick.
const hostile = "fix\x1b]0;owned\x07 it\x1b[2J\u009b31m\x7f\r!"

func TestRunsListAndShowNeutraliseWorkerTextOnATerminal(t *testing.T) {
	root := runsHome(t)
	putRun(t, root, "evil-0102030405-eeeeeeee", transcript.Record{
		"status": "completed", "task": hostile, "branch": "dirtywork/" + hostile, "model": hostile,
		"last_assistant_text": hostile, "files_changed": []string{hostile},
	})
	for _, args := range [][]string{
		{"runs", "list"},
		{"runs", "show", "evil-0102030405-eeeeeeee"},
		{"runs", "show", "evil-0102030405-eeeeeeee", "--markdown"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			pt, tty := openPTY(t)
			read := make(chan []byte)
			go func() {
				var buf bytes.Buffer
				_, _ = io.Copy(&buf, pt) // ends with EIO once the terminal side closes
				read <- buf.Bytes()
			}()
			var errOut bytes.Buffer
			code := Main(args, strings.NewReader(""), tty, &errOut)
			_ = tty.Close()
			out := <-read
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, errOut.String())
			}
			for _, bad := range []string{"\x1b", "\x07", "\u009b", "\x7f"} {
				if bytes.Contains(out, []byte(bad)) {
					t.Errorf("%q reached the terminal:\n%q", bad, out)
				}
			}
			if !bytes.Contains(out, []byte("fix")) {
				t.Errorf("the text itself is gone:\n%q", out)
			}
		})
	}
	// Not a terminal: --json escapes what a terminal acts on and decodes
	// to the exact text; plain output is neutralised all the same.
	out, _, _ := runMain(t, "runs", "show", "evil-0102030405-eeeeeeee", "--json")
	if !strings.Contains(out, `\u001b]0;owned\u0007 it\u001b[2J\u009b31m\u007f\r!`) {
		t.Errorf("--json is not escaped:\n%s", out)
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(out), &rec); err != nil || rec["task"] != hostile {
		t.Errorf("--json does not decode to the exact task: %q %v", rec["task"], err)
	}
	out, _, _ = runMain(t, "runs", "list")
	if !strings.Contains(out, "fix␛]0;owned␇ it␛[2J\\u009b31m␡␍!") {
		t.Errorf("redirected output is not neutralised:\n%q", out)
	}
}
