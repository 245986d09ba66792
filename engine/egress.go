package engine

import (
	"context"
	"fmt"

	"github.com/dirtywork/dirtywork/gitops"
	"github.com/dirtywork/dirtywork/sandbox/egress"
)

// needsEgress reports whether the run's sandbox gets the network, and so
// the egress proxy: --allow-network, or a docker --setup.
func needsEgress(spec Spec) bool {
	return spec.Docker.AllowNetwork || (spec.Sandbox == "docker" && spec.Docker.Setup != "")
}

// egressAllowlist is what the egress proxy of a run with network lets
// through: the operator's --allow-host rules and, unless
// --no-default-hosts, the registries the lockfiles and manifests of the
// base commit call for, read from the host repository's objects (never
// from a tree the worker wrote). nil for a run without network.
func egressAllowlist(ctx context.Context, spec Spec, repoRoot, base string) (egress.Allowlist, error) {
	if !needsEgress(spec) {
		return nil, nil
	}
	allow := append(egress.Allowlist{}, spec.AllowHosts...)
	if spec.NoDefaultHosts {
		return allow, nil
	}
	files, err := gitops.New().BlobsWhere(ctx, repoRoot, base, egress.MaxLockfileBytes, egress.IsLockfile)
	if err != nil {
		return nil, fmt.Errorf("read the lockfiles for the egress allowlist: %w", err)
	}
	return allow.With(egress.DefaultHosts(files)...), nil
}
