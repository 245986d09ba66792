package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"

	tea "charm.land/bubbletea/v2"
	charmlog "charm.land/log/v2"
	"github.com/spf13/cobra"

	"github.com/dirtywork/dirtywork/transcript"
	"github.com/dirtywork/dirtywork/tui"
	"github.com/dirtywork/dirtywork/tui/sshserve"
)

// serveFlags are `dirtywork serve`'s own flags; the mission control ones
// are tuiFlags.
type serveFlags struct {
	ssh            string
	authorizedKeys string
	reviewKeys     string
	hostKey        string
}

// watchRole is what a watch session's refusals say.
const watchRole = "watch role"

// noEditorOverSSH refuses the editor key in every SSH session: the editor
// would run on the server, with a shell a keystroke away.
const noEditorOverSSH = "no editor over SSH: the worktree is on the server; open it there"

func newServeCmd(io *streams) *cobra.Command {
	var f serveFlags
	var tf tuiFlags
	cmd := &cobra.Command{
		Use:   "serve --ssh ADDR",
		Short: "Serve mission control to SSH clients",
		Long: `Serve mission control (the same as 'dirtywork tui') over SSH on ADDR
(host:port, e.g. 127.0.0.1:2222; port 0 picks a free one), so runs on this
machine are reviewed from a laptop or a phone:

  ssh -t -p 2222 host

Every session gets its own mission control, sized to its terminal, over the
one runs root; closing a session ends nothing but it (runs are detached).

Authentication is by public key only (no passwords, no keyboard-interactive),
against OpenSSH authorized_keys files; any other key is refused. Each key has
a role:
  watch   sees everything; cannot launch, stop, give a verdict, accept,
          merge, clean or resume (mission control refuses those keys with
          "read-only session: watch role")
  review  everything mission control does locally
Keys in --authorized-keys (default ~/.ssh/authorized_keys) get watch; keys in
--review-keys get review (a key in both gets review). A key line with options
(from=, command=, restrict…) is left out, as they would not be honoured. The
files are read at start: restart to change who may connect. A file that
cannot be read or holds a line that is not a public key stops the start.
No session opens an editor: it would run on this machine.

The host key is made once (ed25519) at <home>/ssh/host_ed25519 (mode 0600,
its directory 0700) and kept, so clients recognise the server; --host-key
names another file. Its fingerprint is printed at start.

SIGINT or SIGTERM ends every session (each client's terminal is restored)
and the server, with exit 0.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runServe(c, io, f, tf)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.ssh, "ssh", "", "serve over SSH on `ADDR` (host:port)")
	fs.StringVar(&f.authorizedKeys, "authorized-keys", "", "public keys let in with the watch role (default ~/.ssh/authorized_keys)")
	fs.StringVar(&f.reviewKeys, "review-keys", "", "public keys let in with the review role (authorized_keys format)")
	fs.StringVar(&f.hostKey, "host-key", "", "the server's private host key, made when missing (default <home>/ssh/host_ed25519)")
	fs.IntVar(&tf.maxParallel, "max-parallel", 0, "most runs a session keeps alive at once; further launches queue (default 4, or the config file's)")
	fs.StringVar(&tf.repo, "repo", "", "the repository the launch form starts with")
	fs.StringVar(&tf.model, "model", "", "the model the launch form starts with (env DIRTYWORK_MODEL)")
	fs.StringVar(&tf.baseURL, "base-url", "", "the model server launches use (env DIRTYWORK_BASE_URL)")
	fs.StringVar(&tf.sandbox, "sandbox", "", "the sandbox the launch form starts with: docker or none")
	fs.StringVar(&tf.notify, "notify", "", "how an ended run is announced in a session: bell, osc9, both or none")
	fs.StringVar(&tf.theme, "theme", "", "auto (ask each client's terminal), dark or light; NO_COLOR (here or sent by the client) turns colour off")
	fs.StringVar(&tf.logPath, "log", "", "append mission control's errors and events to this file (default <home>/tui.log)")
	return cmd
}

// parseServeAddr checks ADDR is host:port with a numeric port.
func parseServeAddr(addr string) error {
	if addr == "" {
		return withHint(errors.New("serve needs --ssh ADDR"), "for example: dirtywork serve --ssh 127.0.0.1:2222")
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return usageErrorf("--ssh %q: want host:port (%v)", addr, unwrapAddr(err))
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return usageErrorf("--ssh %q: the port must be a number from 0 to 65535", addr)
	}
	return nil
}

func unwrapAddr(err error) string {
	var ae *net.AddrError
	if errors.As(err, &ae) {
		return ae.Err
	}
	return err.Error()
}

// serveKeyFiles are the key files and their roles.
func serveKeyFiles(f serveFlags) ([]sshserve.KeyFile, error) {
	auth := f.authorizedKeys
	if auth == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, usageErrorf("--authorized-keys: no home directory to find ~/.ssh/authorized_keys in: %v", err)
		}
		auth = filepath.Join(home, ".ssh", "authorized_keys")
	}
	files := []sshserve.KeyFile{{Path: auth, Role: sshserve.Watch}}
	if f.reviewKeys != "" {
		files = append(files, sshserve.KeyFile{Path: f.reviewKeys, Role: sshserve.Review})
	}
	return files, nil
}

func runServe(c *cobra.Command, io *streams, f serveFlags, tf tuiFlags) error {
	if err := parseServeAddr(f.ssh); err != nil {
		return err
	}
	// The options are checked once here, so a bad config file stops the
	// start rather than every session; each session builds its own.
	if _, err := tuiOptions(c, tf); err != nil {
		return err
	}
	files, err := serveKeyFiles(f)
	if err != nil {
		return err
	}
	keys, err := sshserve.LoadKeys(files...)
	if err != nil {
		return usageErrorf("%v", err)
	}
	for _, s := range keys.Skipped {
		fmt.Fprintf(io.errOut, "warning: %s\n", s)
	}
	hostPath := f.hostKey
	if hostPath == "" {
		home, err := transcript.Home()
		if err != nil {
			return usageErrorf("%v", err)
		}
		hostPath = filepath.Join(home, "ssh", "host_ed25519")
	}
	hostKey, err := sshserve.HostKey(hostPath)
	if err != nil {
		return usageErrorf("%v", err)
	}
	fp, err := sshserve.Fingerprint(hostKey)
	if err != nil {
		return usageErrorf("%v", err)
	}
	logw := &lockedWriter{w: io.errOut}
	// The SSH libraries log on their own (a session's program ending with
	// an error, a channel refused): through the same neutralised stderr.
	charmlog.SetOutput(logw)
	slog.SetDefault(slog.New(slog.NewTextHandler(logw, nil)))
	srv, err := sshserve.New(sshserve.Config{
		HostKeyPEM: hostKey,
		Keys:       keys,
		Program: func(s sshserve.Session, popts []tea.ProgramOption) *tea.Program {
			opts, err := tuiOptions(c, tf)
			if err != nil {
				logw.printf("session refused: %v", err)
				return nil
			}
			sessionOptions(&opts, s)
			return tui.NewProgram(s.Context, opts, popts...)
		},
		Log: logw.printf,
	})
	if err != nil {
		return usageErrorf("%v", err)
	}
	l, err := net.Listen("tcp", f.ssh)
	if err != nil {
		return usageErrorf("--ssh: %v", err)
	}
	logw.printf("mission control over SSH on %s (host key %s; %d keys)", l.Addr(), fp, keys.Len())
	return serve(c.Context(), srv, l)
}

func serve(ctx context.Context, srv *sshserve.Server, l net.Listener) error {
	if err := srv.Serve(ctx, l); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// sessionOptions fits mission control's options to one SSH session.
func sessionOptions(opts *tui.Options, s sshserve.Session) {
	if s.Role != sshserve.Review {
		opts.ReadOnly = watchRole
	}
	opts.NoEditor = noEditorOverSSH
	if s.Getenv("NO_COLOR") != "" {
		opts.Color = tui.ColorNone
	}
}
