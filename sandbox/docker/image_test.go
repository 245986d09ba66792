package docker

import (
	"errors"
	"net/http"
	"testing"

	"github.com/docker/docker/api/types/image"
)

func TestImageExists(t *testing.T) {
	const id = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	const digest = "ghcr.io/team/worker@sha256:feedfacefeedfacefeedfacefeedfacefeedfacefeedfacefeedfacefeedface"
	images := map[string]image.InspectResponse{
		"dirtywork-worker:v1": {ID: id}, // built here: no RepoDigests
		"ghcr.io/team/worker:0.9": {ID: id, RepoDigests: []string{
			"mirror.example/worker@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
			digest,
		}},
		"retagged:1": {ID: id, RepoDigests: []string{digest}}, // digests of another name
		"no-id:1":    {},
	}
	cl := newFakeEngine(t, func(w http.ResponseWriter, r *http.Request) {
		ref := r.URL.Path[len("/images/") : len(r.URL.Path)-len("/json")]
		img, ok := images[ref]
		if !ok {
			engineError(w, http.StatusNotFound, "No such image: "+ref)
			return
		}
		engineJSON(t, w, img)
	})

	tests := []struct {
		ref        string
		wantDigest string // "" for nil
	}{
		{"dirtywork-worker:v1", ""},
		{"ghcr.io/team/worker:0.9", digest},
		{"retagged:1", ""},
	}
	for _, tt := range tests {
		gotID, gotDigest, err := cl.ImageExists(t.Context(), tt.ref)
		if err != nil {
			t.Fatalf("ImageExists(%q): %v", tt.ref, err)
		}
		if gotID != id {
			t.Errorf("ImageExists(%q) id = %q, want %q", tt.ref, gotID, id)
		}
		switch {
		case tt.wantDigest == "" && gotDigest != nil:
			t.Errorf("ImageExists(%q) digest = %q, want nil", tt.ref, *gotDigest)
		case tt.wantDigest != "" && (gotDigest == nil || *gotDigest != tt.wantDigest):
			t.Errorf("ImageExists(%q) digest = %v, want %q", tt.ref, gotDigest, tt.wantDigest)
		}
	}

	if _, _, err := cl.ImageExists(t.Context(), "missing:1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing image: %v, want ErrNotFound", err)
	}
	if _, _, err := cl.ImageExists(t.Context(), "no-id:1"); err == nil || errors.Is(err, ErrNotFound) {
		t.Errorf("image without an Id: %v, want a plain error", err)
	}
}
