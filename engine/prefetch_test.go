package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/engine/provider"
	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/docker/workspace"
	"github.com/dirtywork/dirtywork/transcript"
)

// The first model request is out before the sandbox has opened: the
// sandbox's start waits here until the model was asked, and the run still
// completes with its prompt naming the sandbox's root.
func TestFirstRequestGoesOutWhileTheSandboxOpens(t *testing.T) {
	repo := dockerRepo(t)
	asked := make(chan struct{})
	prov := &fakeProvider{replies: []any{
		func(context.Context) (provider.Response, error) {
			close(asked)
			return calls(call("c1", "finish", `{"summary":"done early"}`)), nil
		},
	}}
	spec := dockerSpec(repo)
	spec.Docker.Setup = ""
	r, stderr := dockerRunner(t, prov, func(_ context.Context, cfg workspace.Config) (dockerWorkspace, error) {
		select {
		case <-asked:
		case <-time.After(10 * time.Second):
			return nil, errors.New("the model was not asked while the sandbox opened")
		}
		return &fakeDocker{cfg: cfg, fin: sandbox.Finalization{ExportStatus: "ok", TreeHash: fakeTree}}, nil
	})
	payload, err := r.Run(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if payload.Status != transcript.StatusCompleted || payload.FinalMessage != "done early" {
		t.Fatalf("payload %+v\n%s", payload, stderr)
	}
	if len(prov.reqs) != 1 {
		t.Fatalf("%d model requests; the prefetched one is the first turn's", len(prov.reqs))
	}
	if system := prov.reqs[0].Messages[0].Content; !strings.Contains(system, "The repository's files are at /work,") {
		t.Fatalf("system prompt:\n%s", system)
	}
	evs := transcriptEvents(t, payload.Transcript)
	var names []string
	for _, ev := range evs {
		names = append(names, ev["event"].(string))
	}
	if len(names) < 2 || names[0] != "run_start" || names[1] != "model_request" {
		t.Fatalf("events %v: run_start first, then the request", names)
	}
}

// A sandbox that fails to start cancels the request already out, and the
// run is the setup failure it always was.
func TestSandboxFailureCancelsThePrefetchedRequest(t *testing.T) {
	repo := dockerRepo(t)
	asked, cancelled := make(chan struct{}), make(chan struct{})
	prov := &fakeProvider{replies: []any{
		func(ctx context.Context) (provider.Response, error) {
			close(asked)
			<-ctx.Done()
			close(cancelled)
			return provider.Response{}, ctx.Err()
		},
	}}
	spec := dockerSpec(repo)
	spec.Docker.Setup = ""
	r, stderr := dockerRunner(t, prov, func(context.Context, workspace.Config) (dockerWorkspace, error) {
		select {
		case <-asked:
		case <-time.After(10 * time.Second):
			t.Error("the model was not asked while the sandbox opened")
		}
		return nil, &sandbox.SandboxError{Op: "start the docker sandbox", Err: errors.New("no room")}
	})
	payload, err := r.Run(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if payload.Status != transcript.StatusSandboxError || !strings.Contains(payload.FinalMessage, "no room") {
		t.Fatalf("payload %+v\n%s", payload, stderr)
	}
	select {
	case <-cancelled:
	default:
		t.Fatal("the run returned with its prefetched request still out")
	}
}

// Run takes a prefetched request only when it is the one it would send:
// asked with another prompt, it drops it (cancelled) and asks anew.
func TestLoopDropsAPrefetchForAnotherPrompt(t *testing.T) {
	cancelled := make(chan struct{})
	h := newHarness(
		func(ctx context.Context) (provider.Response, error) {
			<-ctx.Done()
			close(cancelled)
			return provider.Response{}, ctx.Err()
		},
		calls(call("c1", "finish", `{"summary":"fresh"}`)),
	)
	h.loop.Prefetch(t.Context(), "system for /elsewhere", "task")
	out := h.loop.Run(t.Context(), "system for /wt", "task")
	if out.Status != transcript.StatusCompleted || out.FinalMessage != "fresh" {
		t.Fatalf("outcome %+v", out)
	}
	select {
	case <-cancelled:
	default:
		t.Fatal("the stale request was not cancelled")
	}
	if len(h.prov.reqs) != 2 || h.prov.reqs[1].Messages[0].Content != "system for /wt" {
		t.Fatalf("requests %+v", h.prov.reqs)
	}
}

// A prefetched request that fails is the first turn's failure, with the
// run's deadline counted from when it went out.
func TestLoopTakesAPrefetchedFailure(t *testing.T) {
	h := newHarness(&provider.Error{Msg: "server said no"})
	h.loop.Prefetch(t.Context(), "sys", "task")
	out := h.loop.Run(t.Context(), "sys", "task")
	if out.Status != transcript.StatusModelError || !strings.Contains(out.FinalMessage, "server said no") || len(h.prov.reqs) != 1 {
		t.Fatalf("outcome %+v after %d requests", out, len(h.prov.reqs))
	}
}
