package docker

import (
	"errors"
	"testing"
)

func TestCheckReference(t *testing.T) {
	for _, ref := range []string{"dirtywork-worker:v1.2.3", "dirtywork-base:bookworm", "localhost:5000/team/worker:dev-abc", "worker"} {
		if err := CheckReference(ref); err != nil {
			t.Errorf("CheckReference(%q) = %v, want nil", ref, err)
		}
	}
	for _, ref := range []string{"", "Upper:case", "has space:1", "worker:bad+tag", "worker@sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"} {
		if err := CheckReference(ref); !errors.Is(err, ErrInvalidReference) {
			t.Errorf("CheckReference(%q) = %v, want ErrInvalidReference", ref, err)
		}
	}
}

func TestRepositoryOf(t *testing.T) {
	for ref, want := range map[string]string{
		"debian:bookworm-slim":                   "debian",
		"debian":                                 "debian",
		"localhost:5000/foo:tag":                 "localhost:5000/foo",
		"localhost:5000/foo":                     "localhost:5000/foo",
		"ghcr.io/team/worker:0.9@sha256:abcdef0": "ghcr.io/team/worker",
		"ghcr.io/team/worker@sha256:abcdef0":     "ghcr.io/team/worker",
	} {
		if got := repositoryOf(ref); got != want {
			t.Errorf("repositoryOf(%q) = %q, want %q", ref, got, want)
		}
	}
}
