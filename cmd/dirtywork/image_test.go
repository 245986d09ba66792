package main

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	workerimage "github.com/dirtywork/dirtywork/docker"
	"github.com/dirtywork/dirtywork/sandbox/docker"
)

// deadDaemon returns a DOCKER_HOST where nothing listens.
func deadDaemon(t *testing.T) string {
	return "DOCKER_HOST=unix://" + filepath.Join(t.TempDir(), "nothing-listens.sock")
}

func TestImageUsageErrors(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantErr  string
		wantHint string
	}{
		{"no subcommand", []string{"image"}, "image needs a command: build", "see 'dirtywork image --help'"},
		{"unknown subcommand", []string{"image", "push"}, `unknown image command "push"`, "see 'dirtywork image --help'"},
		{"positional argument", []string{"image", "build", "now"}, `unexpected argument "now"`, "see 'dirtywork image build --help'"},
		{"unknown flag", []string{"image", "build", "--pull"}, "unknown flag: --pull", "see 'dirtywork image build --help'"},
		{"invalid tag", []string{"image", "build", "--tag", "Worker Image"}, `invalid image reference "Worker Image"`, "--tag takes an image name"},
		{"digest tag", []string{"image", "build", "--tag", "w@sha256:" + strings.Repeat("ab", 32)}, "cannot be named by digest", "--tag takes an image name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// No daemon answers: a usage error must be found before one is
			// asked.
			out, errOut, code := runCLI(t, "", []string{deadDaemon(t)}, tt.args...)
			if code != ExitUsage {
				t.Errorf("exit %d, want %d", code, ExitUsage)
			}
			if out != "" {
				t.Errorf("stdout %q, want nothing", out)
			}
			lines := strings.SplitN(strings.TrimSpace(errOut), "\n", 2)
			if len(lines) != 2 || !strings.HasPrefix(lines[0], "error: ") || !strings.Contains(lines[0], tt.wantErr) ||
				!strings.Contains(lines[1], tt.wantHint) {
				t.Errorf("stderr = %q, want error %q then hint %q", errOut, tt.wantErr, tt.wantHint)
			}
		})
	}
}

func TestImageBuildDaemonUnreachable(t *testing.T) {
	host := deadDaemon(t)
	out, errOut, code := runCLI(t, "", []string{host}, "image", "build")
	if code != ExitUsage {
		t.Errorf("exit %d, want %d", code, ExitUsage)
	}
	if out != "" {
		t.Errorf("stdout %q, want nothing", out)
	}
	sock := strings.TrimPrefix(host, "DOCKER_HOST=")
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	if len(lines) != 2 {
		t.Fatalf("stderr = %q, want an error line and a hint line", errOut)
	}
	if !strings.HasPrefix(lines[0], "error: docker daemon unreachable: ") || !strings.Contains(lines[0], sock+" (DOCKER_HOST)") {
		t.Errorf("error line %q does not say the daemon at %s (DOCKER_HOST) is unreachable", lines[0], sock)
	}
	if !strings.HasPrefix(lines[1], "start the Docker daemon") || !strings.Contains(lines[1], "--sandbox none") {
		t.Errorf("hint %q does not say how to get a daemon or do without", lines[1])
	}
}

// fakeDaemon serves the few Engine API calls image build makes on a unix
// socket: the images it has, and builds that answer with stream (tagging
// the image unless the stream reports an error). It returns the
// DOCKER_HOST setting and a function reporting the BASE of the last build.
func fakeDaemon(t *testing.T, images map[string]bool, stream string) (hostEnv string, lastBase func() string) {
	t.Helper()
	var (
		mu   sync.Mutex
		base string
	)
	mux := http.NewServeMux()
	mux.HandleFunc("/_ping", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Api-Version", "1.41")
	})
	versioned := regexp.MustCompile(`^/v[0-9.]+`)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		path := versioned.ReplaceAllString(r.URL.Path, "")
		w.Header().Set("Content-Type", "application/json")
		switch {
		case path == "/version":
			_, _ = io.WriteString(w, `{"Version":"20.10.24","ApiVersion":"1.41"}`)
		case strings.HasPrefix(path, "/images/") && strings.HasSuffix(path, "/json"):
			ref := strings.TrimSuffix(strings.TrimPrefix(path, "/images/"), "/json")
			if !images[ref] {
				w.WriteHeader(http.StatusNotFound)
				_, _ = io.WriteString(w, `{"message":"No such image: `+ref+`"}`)
				return
			}
			_, _ = io.WriteString(w, `{"Id":"sha256:`+strings.Repeat("0", 64)+`"}`)
		case path == "/build":
			_, _ = io.Copy(io.Discard, r.Body)
			var args map[string]string
			_ = json.Unmarshal([]byte(r.URL.Query().Get("buildargs")), &args)
			base = args["BASE"]
			if !strings.Contains(stream, "errorDetail") {
				images[r.URL.Query().Get("t")] = true
			}
			_, _ = io.WriteString(w, stream)
		default:
			t.Errorf("unexpected Engine API call %s %s", r.Method, r.URL.Path)
			w.WriteHeader(http.StatusNotImplemented)
		}
	})
	sock := filepath.Join(t.TempDir(), "docker.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "DOCKER_HOST=unix://" + sock, func() string {
		mu.Lock()
		defer mu.Unlock()
		return base
	}
}

func TestImageBuild(t *testing.T) {
	const ok = `{"stream":"Step 1/7 : ARG BASE\n"}` + "\n" + `{"stream":"Successfully built\n"}` + "\n"
	const failed = `{"stream":"Step 2/7 : FROM ${BASE}\n"}` + "\n" +
		`{"errorDetail":{"message":"pull access denied for debian"},"error":"pull access denied for debian"}` + "\n"
	tests := []struct {
		name     string
		images   map[string]bool
		stream   string
		args     []string
		wantBase string
		wantErr  string
		wantHint string
	}{
		{
			name:     "on the bootstrapped base when it exists",
			images:   map[string]bool{workerimage.BaseImage: true},
			stream:   ok,
			args:     []string{"--tag", "worker:test"},
			wantBase: workerimage.BaseImage,
		},
		{
			name:     "on the registry's base otherwise",
			images:   map[string]bool{},
			stream:   ok,
			args:     []string{"--tag", "worker:test"},
			wantBase: workerimage.RegistryBase,
		},
		{
			name:     "a failed registry build suggests bootstrapping",
			images:   map[string]bool{},
			stream:   failed,
			args:     []string{"--tag", "worker:test"},
			wantBase: workerimage.RegistryBase,
			wantErr:  "error: build image worker:test: the daemon reported a failure: pull access denied for debian",
			wantHint: "where no container registry is reachable, build on a base made here: dirtywork image build --tag worker:test --bootstrap-base",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host, lastBase := fakeDaemon(t, tt.images, tt.stream)
			out, errOut, code := runCLI(t, "", []string{host}, append([]string{"image", "build"}, tt.args...)...)
			if got := lastBase(); got != tt.wantBase {
				t.Errorf("built on %q, want %q", got, tt.wantBase)
			}
			if !strings.Contains(errOut, "Step ") {
				t.Errorf("stderr %q lacks the build output", errOut)
			}
			if tt.wantErr != "" {
				if code != ExitUsage || out != "" {
					t.Errorf("exit %d, stdout %q; want exit 2 and nothing", code, out)
				}
				if !strings.Contains(errOut, tt.wantErr+"\n"+tt.wantHint+"\n") {
					t.Errorf("stderr = %q\nwant the error %q and the hint %q", errOut, tt.wantErr, tt.wantHint)
				}
				return
			}
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var res imageBuilt
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("stdout %q is not one JSON object: %v", out, err)
			}
			want := imageBuilt{Image: "worker:test", ID: "sha256:" + strings.Repeat("0", 64), Base: tt.wantBase}
			if res != want {
				t.Errorf("result = %+v, want %+v", res, want)
			}
		})
	}
}

func TestImageBuildDefaultTagIsTheVersion(t *testing.T) {
	old := version
	version = "v9.9.9"
	t.Cleanup(func() { version = old })
	host, _ := fakeDaemon(t, map[string]bool{workerimage.BaseImage: true}, `{"stream":"ok\n"}`)
	out, errOut, code := runCLI(t, "", []string{host}, "image", "build")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, `"image":"dirtywork-worker:v9.9.9"`) {
		t.Errorf("stdout %q does not name dirtywork-worker:v9.9.9", out)
	}
}

func TestBootstrapRefusalHints(t *testing.T) {
	t.Parallel()
	spec := imageBuild{tag: "worker:test", bootstrap: true}
	for _, tt := range []struct {
		err      error
		wantHint string
	}{
		{docker.ErrNeedsRoot, "run it as root: sudo dirtywork image build --tag worker:test --bootstrap-base"},
		{docker.ErrNoDebootstrap, "apt-get install debootstrap), then run: dirtywork image build --tag worker:test --bootstrap-base"},
	} {
		code, msg, hint := exitCode(bootstrapError(tt.err, spec))
		if code != ExitUsage || msg != tt.err.Error() || !strings.Contains(hint, tt.wantHint) {
			t.Errorf("%v: exit %d, %q, hint %q; want exit 2 with hint %q", tt.err, code, msg, hint, tt.wantHint)
		}
	}
	other := errors.New("disk full")
	if code, msg, hint := exitCode(bootstrapError(other, spec)); code != ExitUsage || msg != "disk full" || hint != "" {
		t.Errorf("an unclassified error: exit %d, %q, hint %q; want exit 2, the error alone", code, msg, hint)
	}
}

func TestImageBuildCommand(t *testing.T) {
	t.Parallel()
	def := workerimage.DefaultImage(Version())
	for _, tt := range []struct {
		image     string
		bootstrap bool
		want      string
	}{
		{def, false, "dirtywork image build"},
		{def, true, "dirtywork image build --bootstrap-base"},
		{"localhost:5000/team/worker:1", false, "dirtywork image build --tag localhost:5000/team/worker:1"},
		{"it's odd", false, `dirtywork image build --tag 'it'\''s odd'`},
	} {
		if got := imageBuildCommand(tt.image, tt.bootstrap); got != tt.want {
			t.Errorf("imageBuildCommand(%q, %v) = %q, want %q", tt.image, tt.bootstrap, got, tt.want)
		}
	}
	if got, want := imageMissingHint(def),
		"build it with: dirtywork image build (where no container registry is reachable: dirtywork image build --bootstrap-base)"; got != want {
		t.Errorf("imageMissingHint = %q, want %q", got, want)
	}
}
