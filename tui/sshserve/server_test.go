package sshserve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	gossh "golang.org/x/crypto/ssh"
)

// sessionModel shows what its session was built with.
type sessionModel struct {
	s    Session
	w, h int
}

func (m sessionModel) Init() tea.Cmd { return nil }

func (m sessionModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.w, m.h = msg.Width, msg.Height
	case tea.KeyPressMsg:
		if msg.String() == "q" {
			return m, tea.Quit
		}
	}
	return m, nil
}

func (m sessionModel) View() tea.View {
	return tea.NewView(fmt.Sprintf("role=%s\nterm=%s colorterm=%s\nsize=%dx%d\n", m.s.Role, m.s.Getenv("TERM"), m.s.Getenv("COLORTERM"), m.w, m.h))
}

type testServer struct {
	addr    string
	hostKey gossh.PublicKey
	watch   gossh.Signer
	review  gossh.Signer
	cancel  context.CancelFunc
	served  chan error
	mu      sync.Mutex
	log     []string
}

func startServer(t *testing.T) *testServer {
	t.Helper()
	dir := t.TempDir()
	watch, watchLine := newKey(t, "")
	review, reviewLine := newKey(t, "")
	keys, err := LoadKeys(KeyFile{Path: writeFile(t, dir, "auth", watchLine), Role: Watch}, KeyFile{Path: writeFile(t, dir, "rev", reviewLine), Role: Review})
	if err != nil {
		t.Fatal(err)
	}
	pemKey, err := HostKey(filepath.Join(dir, "ssh", "host_ed25519"))
	if err != nil {
		t.Fatal(err)
	}
	host, err := gossh.ParsePrivateKey(pemKey)
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{hostKey: host.PublicKey(), watch: watch, review: review, served: make(chan error, 1)}
	srv, err := New(Config{
		HostKeyPEM: pemKey,
		Keys:       keys,
		Program: func(s Session, popts []tea.ProgramOption) *tea.Program {
			return tea.NewProgram(sessionModel{s: s}, append(popts, tea.WithContext(s.Context))...)
		},
		Log: func(format string, args ...any) {
			ts.mu.Lock()
			defer ts.mu.Unlock()
			ts.log = append(ts.log, fmt.Sprintf(format, args...))
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts.addr = l.Addr().String()
	ctx, cancel := context.WithCancel(t.Context())
	ts.cancel = cancel
	go func() { ts.served <- srv.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-ts.served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return ts
}

func (ts *testServer) dial(auth ...gossh.AuthMethod) (*gossh.Client, error) {
	return gossh.Dial("tcp", ts.addr, &gossh.ClientConfig{
		User:            "reader",
		Auth:            auth,
		HostKeyCallback: gossh.FixedHostKey(ts.hostKey),
		Timeout:         30 * time.Second,
	})
}

// screen collects what a session writes, with escape sequences removed.
type screen struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *screen) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.ReplaceAll(ansi.Strip(s.buf.String()), "\r", "")
}

func (s *screen) wait(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(s.text(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the session's output:\n%s", want, s.text())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// openTUI opens a session with a pty running the program.
func openTUI(t *testing.T, c *gossh.Client, term string, w, h int, env map[string]string) (*gossh.Session, *screen, io.WriteCloser) {
	t.Helper()
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sess.Close() })
	for k, v := range env {
		if err := sess.Setenv(k, v); err != nil {
			t.Fatalf("setenv %s: %v", k, err)
		}
	}
	if err := sess.RequestPty(term, h, w, gossh.TerminalModes{}); err != nil {
		t.Fatal(err)
	}
	out := &screen{}
	sess.Stdout = out
	in, err := sess.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.Shell(); err != nil {
		t.Fatal(err)
	}
	return sess, out, in
}

func TestServerGivesEachSessionItsRoleSizeAndTerminal(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	for _, tc := range []struct {
		name   string
		key    gossh.Signer
		role   string
		term   string
		want   string
		env    map[string]string
		wantCT string
	}{
		{"watch key", ts.watch, "watch", "xterm-256color", "xterm-256color", map[string]string{"COLORTERM": "truecolor"}, "truecolor"},
		{"review key, hostile TERM and COLORTERM", ts.review, "review", "xterm\x1b]0;owned\x07", "dumb", map[string]string{"COLORTERM": "x\x1b[2J"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ts.dial(gossh.PublicKeys(tc.key))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = c.Close() }()
			sess, out, in := openTUI(t, c, tc.term, 100, 30, tc.env)
			out.wait(t, "role="+tc.role)
			out.wait(t, "term="+tc.want+" colorterm="+tc.wantCT+"\n")
			out.wait(t, "size=100x30")
			// The window follows the client's.
			if err := sess.WindowChange(40, 120); err != nil {
				t.Fatal(err)
			}
			out.wait(t, "size=120x40")
			if _, err := in.Write([]byte("q")); err != nil {
				t.Fatal(err)
			}
			if err := sess.Wait(); err != nil {
				t.Fatalf("the session did not end cleanly: %v", err)
			}
		})
	}
}

func TestServerRefusesUnknownKeysAndEveryOtherMethod(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	stranger, _ := newKey(t, "")
	for name, auth := range map[string]gossh.AuthMethod{
		"unknown key": gossh.PublicKeys(stranger),
		"password":    gossh.Password("hunter2"),
		"keyboard-interactive": gossh.KeyboardInteractive(func(string, string, []string, []bool) ([]string, error) {
			return []string{"hunter2"}, nil
		}),
	} {
		c, err := ts.dial(auth)
		if err == nil {
			_ = c.Close()
			t.Errorf("%s: let in", name)
			continue
		}
		if !strings.Contains(err.Error(), "unable to authenticate") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestServerRefusesSessionsWithoutATerminalOrWithACommand(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	c, err := ts.dial(gossh.PublicKeys(ts.review))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()

	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	var errOut bytes.Buffer
	sess.Stderr = &errOut
	err = sess.Shell()
	if err == nil {
		err = sess.Wait()
	}
	var ee *gossh.ExitError
	if !errors.As(err, &ee) || ee.ExitStatus() != 1 || !strings.Contains(errOut.String(), "needs a terminal") {
		t.Fatalf("a session without a pty: %v, stderr %q", err, errOut.String())
	}

	sess, err = c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.RequestPty("xterm", 24, 80, gossh.TerminalModes{}); err != nil {
		t.Fatal(err)
	}
	out, err := sess.CombinedOutput("sh -c id")
	if !errors.As(err, &ee) || ee.ExitStatus() != 1 || !strings.Contains(string(out), "no commands") {
		t.Fatalf("a command: %v, output %q", err, out)
	}
}

func TestServerShutdownEndsSessionsCleanly(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	c, err := ts.dial(gossh.PublicKeys(ts.watch))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	sess, out, _ := openTUI(t, c, "xterm", 80, 24, nil)
	out.wait(t, "role=watch")
	ts.cancel()
	if err := sess.Wait(); err != nil {
		t.Fatalf("a session at shutdown: %v", err)
	}
	select {
	case err := <-ts.served:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
		ts.served <- nil // for the cleanup
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not return after shutdown")
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if got := strings.Join(ts.log, "\n"); !strings.Contains(got, "opened (watch role") || !strings.Contains(got, "closed") {
		t.Fatalf("log:\n%s", got)
	}
}

// TestServerSessionsAreIndependent: one session ending leaves another,
// open at the same time, working.
func TestServerSessionsAreIndependent(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	var outs []*screen
	var sessions []*gossh.Session
	var ins []io.WriteCloser
	for _, key := range []gossh.Signer{ts.watch, ts.review} {
		c, err := ts.dial(gossh.PublicKeys(key))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = c.Close() }()
		sess, out, in := openTUI(t, c, "xterm", 80, 24, nil)
		sessions, outs, ins = append(sessions, sess), append(outs, out), append(ins, in)
	}
	outs[0].wait(t, "role=watch")
	outs[1].wait(t, "role=review")
	// The watch client drops its connection without quitting.
	_ = sessions[0].Close()
	if err := sessions[1].WindowChange(30, 90); err != nil {
		t.Fatal(err)
	}
	outs[1].wait(t, "size=90x30")
	if _, err := ins[1].Write([]byte("q")); err != nil {
		t.Fatal(err)
	}
	if err := sessions[1].Wait(); err != nil {
		t.Fatalf("the other session: %v", err)
	}
}
