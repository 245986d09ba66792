package docker

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/docker/docker/api/types/image"

	workerimage "github.com/dirtywork/dirtywork/docker"
)

// readTar returns the names and contents of the regular files in a tar
// stream; any other kind of entry is an error.
func readTar(r io.Reader) (map[string]string, error) {
	files := map[string]string{}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		if hdr.Typeflag != tar.TypeReg {
			return nil, fmt.Errorf("entry %q has type %q, want a regular file", hdr.Name, hdr.Typeflag)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		files[hdr.Name] = string(data)
	}
}

func TestBuildContextHoldsExactlyTheDockerfile(t *testing.T) {
	data, err := buildContext(workerimage.Dockerfile())
	if err != nil {
		t.Fatal(err)
	}
	files, err := readTar(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || files["Dockerfile"] != workerimage.Dockerfile() {
		t.Fatalf("build context = %v, want only Dockerfile with the embedded content", keys(files))
	}
	again, err := buildContext(workerimage.Dockerfile())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, again) {
		t.Error("the same Dockerfile gave two different build contexts")
	}
}

func keys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// buildRequest is what the fake engine saw of a build.
type buildRequest struct {
	tags      []string
	buildArgs string
	version   string
	context   map[string]string
}

// fakeBuilder is an engine whose builds answer with stream and, when the
// stream succeeds, tag the image. The function it returns reports the last
// build request.
func fakeBuilder(t *testing.T, stream string) (*Client, func() buildRequest) {
	t.Helper()
	var (
		mu     sync.Mutex
		seen   buildRequest
		tagged = map[string]bool{}
	)
	cl := newFakeEngine(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/build":
			q := r.URL.Query()
			files, err := readTar(r.Body)
			if err != nil {
				t.Errorf("build context: %v", err)
			}
			seen = buildRequest{tags: q["t"], buildArgs: q.Get("buildargs"), version: q.Get("version"), context: files}
			if !strings.Contains(stream, "error") {
				for _, tag := range q["t"] {
					tagged[tag] = true
				}
			}
			_, _ = io.WriteString(w, stream)
		case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/images/"):
			ref := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/images/"), "/json")
			if !tagged[ref] {
				engineError(w, http.StatusNotFound, "No such image: "+ref)
				return
			}
			engineJSON(t, w, image.InspectResponse{ID: "sha256:built"})
		default:
			engineError(w, http.StatusNotImplemented, "unexpected "+r.Method+" "+r.URL.Path)
		}
	})
	return cl, func() buildRequest {
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
}

func TestBuildImageSendsTheEmbeddedDockerfile(t *testing.T) {
	cl, lastBuild := fakeBuilder(t, `{"stream":"Step 1/7 : ARG BASE\n"}
{"aux":{"ID":"sha256:built"}}
{"stream":"Successfully tagged dirtywork-worker:v1\n"}
`)
	var progress strings.Builder
	id, err := cl.BuildImage(t.Context(), BuildSpec{Tag: "dirtywork-worker:v1", Base: "debian:bookworm-slim"}, &progress)
	if err != nil {
		t.Fatal(err)
	}
	if id != "sha256:built" {
		t.Errorf("id = %q", id)
	}
	if want := "Step 1/7 : ARG BASE\nSuccessfully tagged dirtywork-worker:v1\n"; progress.String() != want {
		t.Errorf("progress = %q, want %q", progress.String(), want)
	}
	seen := lastBuild()
	if len(seen.tags) != 1 || seen.tags[0] != "dirtywork-worker:v1" {
		t.Errorf("tags = %q", seen.tags)
	}
	if seen.version != "1" {
		t.Errorf("builder version = %q, want the classic builder (1)", seen.version)
	}
	if want := `{"BASE":"debian:bookworm-slim"}`; seen.buildArgs != want {
		t.Errorf("buildargs = %s, want %s", seen.buildArgs, want)
	}
	if len(seen.context) != 1 || seen.context["Dockerfile"] != workerimage.Dockerfile() {
		t.Errorf("the daemon got context files %v, want only the embedded Dockerfile", keys(seen.context))
	}
}

func TestBuildImageWithoutBaseKeepsTheDockerfileDefault(t *testing.T) {
	cl, lastBuild := fakeBuilder(t, `{"stream":"ok\n"}`)
	if _, err := cl.BuildImage(t.Context(), BuildSpec{Tag: "w:1"}, io.Discard); err != nil {
		t.Fatal(err)
	}
	seen := lastBuild()
	if strings.Contains(seen.buildArgs, workerimage.BaseArg) {
		t.Errorf("buildargs = %s, want no %s", seen.buildArgs, workerimage.BaseArg)
	}
	if len(seen.context) != 1 {
		t.Errorf("no build reached the daemon")
	}
}

func TestBuildImageFailsOnErrorDetail(t *testing.T) {
	cl, _ := fakeBuilder(t, `{"stream":"Step 4/7 : RUN apt-get update\n"}
{"errorDetail":{"code":100,"message":"The command '/bin/sh -c apt-get update' returned a non-zero code: 100"},"error":"The command '/bin/sh -c apt-get update' returned a non-zero code: 100"}
`)
	var progress strings.Builder
	_, err := cl.BuildImage(t.Context(), BuildSpec{Tag: "w:1"}, &progress)
	if !errors.Is(err, ErrStreamFailed) {
		t.Fatalf("error = %v, want ErrStreamFailed", err)
	}
	if want := "build image w:1: the daemon reported a failure: The command '/bin/sh -c apt-get update' returned a non-zero code: 100"; err.Error() != want {
		t.Errorf("error = %q\nwant    %q", err, want)
	}
	if !strings.Contains(progress.String(), "Step 4/7") {
		t.Errorf("the output before the failure was lost: %q", progress.String())
	}
}

func TestBuildImageRefusesABadTag(t *testing.T) {
	cl, lastBuild := fakeBuilder(t, `{"stream":"ok\n"}`)
	_, err := cl.BuildImage(t.Context(), BuildSpec{Tag: "Bad Tag"}, io.Discard)
	if !errors.Is(err, ErrInvalidReference) {
		t.Fatalf("error = %v, want ErrInvalidReference", err)
	}
	if lastBuild().context != nil {
		t.Error("a build was sent for an invalid tag")
	}
}
