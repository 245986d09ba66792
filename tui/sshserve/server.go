package sshserve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strings"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/ssh"
	"charm.land/wish/v2"
	"charm.land/wish/v2/bubbletea"
	"github.com/charmbracelet/colorprofile"
)

// Session is what the program of one SSH session is built from.
type Session struct {
	// Context ends when the session does.
	Context context.Context
	// Role is the role of the key the client authenticated with.
	Role Role
	// User is the user name the client gave (its own choice: show it
	// neutralised).
	User string
	// Env is the client's terminal environment, sanitised: TERM from its
	// pty request and those of COLORTERM, NO_COLOR, CLICOLOR and
	// CLICOLOR_FORCE it sent, each only when it is plain text.
	Env []string
}

// Getenv returns the value of name in the session's environment.
func (s Session) Getenv(name string) string {
	for _, kv := range s.Env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}

// Config configures a Server.
type Config struct {
	// HostKeyPEM is the server's private host key (see HostKey).
	HostKeyPEM []byte
	// Keys are the keys let in, with their roles.
	Keys *Keys
	// Program builds a session's program with popts, its terminal (input,
	// output, environment, window size). A nil program ends the session
	// with an error line.
	Program func(s Session, popts []tea.ProgramOption) *tea.Program
	// Log receives a line per session opened, closed or refused; may be
	// nil.
	Log func(format string, args ...any)
	// ShutdownWait bounds how long Serve waits, once its context ends, for
	// the sessions' programs to quit before it closes their connections
	// (10 s when 0).
	ShutdownWait time.Duration
}

// Server is mission control's SSH server.
type Server struct {
	cfg Config
	srv *ssh.Server

	mu       sync.Mutex
	closing  bool
	programs map[ssh.Session]*tea.Program
	sessions sync.WaitGroup
}

type roleKey struct{}

// New builds the server: public keys only (no password, no
// keyboard-interactive), a terminal emulated per session.
func New(cfg Config) (*Server, error) {
	if cfg.Keys == nil || cfg.Keys.Len() == 0 {
		// With no public-key handler the SSH library would let every
		// client in without authentication.
		return nil, errNoKeys
	}
	if cfg.Program == nil {
		return nil, errors.New("sshserve: no program")
	}
	if cfg.ShutdownWait == 0 {
		cfg.ShutdownWait = 10 * time.Second
	}
	s := &Server{cfg: cfg, programs: map[ssh.Session]*tea.Program{}}
	srv, err := wish.NewServer(
		wish.WithHostKeyPEM(cfg.HostKeyPEM),
		wish.WithPublicKeyAuth(func(_ ssh.Context, key ssh.PublicKey) bool {
			_, ok := cfg.Keys.Role(key)
			return ok
		}),
		// An emulated pty: the program reads and writes the session
		// itself. An allocated one would have two readers of the window
		// changes (its resizer and the program), and the program, in this
		// process, would never get the SIGWINCH that tells a terminal
		// program its size changed.
		ssh.EmulatePty(),
		// The last middleware runs first: the gate decides before a
		// program is built.
		wish.WithMiddleware(bubbletea.MiddlewareWithProgramHandler(s.program), s.gate),
	)
	if err != nil {
		return nil, fmt.Errorf("ssh server: %w", err)
	}
	if srv.PasswordHandler != nil || srv.KeyboardInteractiveHandler != nil || srv.PublicKeyHandler == nil {
		return nil, errors.New("ssh server: authentication is not public keys only")
	}
	s.srv = srv
	return s, nil
}

func (s *Server) logf(format string, args ...any) {
	if s.cfg.Log != nil {
		s.cfg.Log(format, args...)
	}
}

// gate lets through a session with a pty, no command, and an authorized
// key, and remembers its role for the program.
func (s *Server) gate(next ssh.Handler) ssh.Handler {
	return func(sess ssh.Session) {
		who := fmt.Sprintf("%s@%s", sess.User(), sess.RemoteAddr())
		role, ok := s.cfg.Keys.Role(sess.PublicKey())
		if !ok {
			// The auth handler let the key in; this is a second look at the
			// key the client actually signed with.
			s.logf("session %s refused: key not authorized", who)
			wish.Fatalln(sess, "dirtywork: key not authorized")
			return
		}
		if _, _, hasPty := sess.Pty(); !hasPty {
			s.logf("session %s refused: no terminal", who)
			wish.Fatalln(sess, "dirtywork: mission control needs a terminal; connect with ssh -t")
			return
		}
		if len(sess.RawCommand()) > 0 || sess.Subsystem() != "" {
			s.logf("session %s refused: asked to run a command", who)
			wish.Fatalln(sess, "dirtywork: this server runs mission control only, no commands")
			return
		}
		s.mu.Lock()
		if s.closing {
			s.mu.Unlock()
			wish.Fatalln(sess, "dirtywork: the server is shutting down")
			return
		}
		s.sessions.Add(1)
		s.mu.Unlock()
		defer s.sessions.Done()
		ctx, cancel := context.WithCancel(sess.Context())
		defer cancel()
		sess.Context().SetValue(roleKey{}, sessionStart{role: role, ctx: ctx})
		s.logf("session %s opened (%s role, key %s)", who, role, fingerprint(sess.PublicKey()))
		next(sess)
		s.mu.Lock()
		delete(s.programs, sess)
		s.mu.Unlock()
		// The library sends the exit status once this handler returns,
		// which is after the session is counted done: a shutdown waiting
		// for the count could close the connection first, and the client
		// would see its session end without a status. It is sent here.
		_ = sess.Exit(0)
		s.logf("session %s closed", who)
	}
}

type sessionStart struct {
	role Role
	ctx  context.Context
}

// program builds the session's program on the session's terminal.
func (s *Server) program(sess ssh.Session) *tea.Program {
	start, ok := sess.Context().Value(roleKey{}).(sessionStart)
	if !ok {
		return nil
	}
	env := sessionEnv(sess)
	// MakeOptions wires the pty and turns a suspend (ctrl+z) into a
	// resume: a suspend would stop the server. The environment it passes
	// is everything the client sent; only the sanitised one goes on.
	popts := append(bubbletea.MakeOptions(sess), tea.WithEnvironment(env), tea.WithColorProfile(colorprofile.Env(env)))
	p := s.cfg.Program(Session{Context: start.ctx, Role: start.role, User: sess.User(), Env: env}, popts)
	if p == nil {
		wish.Fatalln(sess, "dirtywork: mission control could not start")
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return nil
	}
	s.programs[sess] = p
	return p
}

// plainValue is what a terminal setting from the client may hold: it
// reaches terminal detection, never raw into output, but nothing more is
// needed than this.
var plainValue = regexp.MustCompile(`^[A-Za-z0-9._+:-]{1,64}$`)

// sessionEnv is the client's terminal environment, sanitised.
func sessionEnv(sess ssh.Session) []string {
	term := "dumb"
	if pty, _, ok := sess.Pty(); ok && plainValue.MatchString(pty.Term) {
		term = pty.Term
	}
	env := []string{"TERM=" + term}
	seen := map[string]bool{}
	for _, kv := range sess.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "COLORTERM", "NO_COLOR", "CLICOLOR", "CLICOLOR_FORCE":
		default:
			continue
		}
		if seen[k] || !plainValue.MatchString(v) {
			continue
		}
		seen[k] = true
		env = append(env, k+"="+v)
	}
	return env
}

func fingerprint(k ssh.PublicKey) string {
	if k == nil {
		return "none"
	}
	return gosshFingerprint(k)
}

// Serve accepts sessions on l until ctx ends; then it refuses new ones,
// asks every session's program to quit (each restores its client's
// terminal and its session ends with status 0), waits for them within
// ShutdownWait, and closes what is left. It returns nil after a shutdown
// and the listener's error otherwise.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- s.srv.Serve(l) }()
	select {
	case err := <-errc:
		return fmt.Errorf("ssh server: %w", err)
	case <-ctx.Done():
	}
	s.mu.Lock()
	s.closing = true
	quitting := make([]*tea.Program, 0, len(s.programs))
	for _, p := range s.programs {
		quitting = append(quitting, p)
	}
	s.mu.Unlock()
	for _, p := range quitting {
		// Quit hands the program a message, which waits for its loop: not
		// under the lock, and not one program after another.
		go p.Quit()
	}
	done := make(chan struct{})
	go func() {
		s.sessions.Wait()
		close(done)
	}()
	timer := time.NewTimer(s.cfg.ShutdownWait)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		s.logf("sessions still open after %s: closing their connections", s.cfg.ShutdownWait)
	}
	_ = s.srv.Close() // the listener and any connection left; nothing to report
	if err := <-errc; !errors.Is(err, ssh.ErrServerClosed) {
		return fmt.Errorf("ssh server: %w", err)
	}
	return nil
}
