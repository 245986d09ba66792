package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/dirtywork/dirtywork/sandbox/host/jail"
)

// hostPreflight is preflight step 6 for --sandbox none: the jail's layers
// are tried out on this system, and one that cannot be set up refuses the
// run (exit 2, each missing layer with its reason and fix) unless
// DIRTYWORK_ALLOW_UNCONFINED=1, which runs without the missing layers and
// says so in run_start.sandbox: never a silent downgrade.
func (r *Runner) hostPreflight(ctx context.Context, p *prepared) error {
	var err error
	if p.hostMemory, err = sizeBytes("memory", p.spec.Docker.Memory); err != nil {
		return refuse("", "%v", err)
	}
	if p.hostTmp, err = sizeBytes("tmp-size", p.spec.Docker.TmpSize); err != nil {
		return refuse("", "%v", err)
	}
	report := jail.Probe(ctx)
	p.jailProbe = &report
	if err := report.Err(); err != nil && r.getenv(AllowUnconfinedEnv) != "1" {
		return &PreflightError{Msg: err.Error(), Hint: hostJailHint, Err: err}
	}
	return nil
}

// sizeBytes parses a size flag's value (512m, 4g, plain bytes) into bytes;
// "" (a Spec built without the flag) is 0, the jail's default.
func sizeBytes(flag, v string) (int64, error) {
	s := strings.ToLower(strings.TrimSpace(v))
	if s == "" {
		return 0, nil // the jail's default
	}
	mult := int64(1)
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'b':
			s = s[:n-1]
		case 'k':
			mult, s = 1<<10, s[:n-1]
		case 'm':
			mult, s = 1<<20, s[:n-1]
		case 'g':
			mult, s = 1<<30, s[:n-1]
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return 0, errors.Join(fmt.Errorf("--%s must be a size such as 512m or 4g, got '%s'", flag, v))
	}
	return n * mult, nil
}
