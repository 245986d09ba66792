package gitops

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
)

// filterOverrides returns environment entries that blank every filter
// driver the repository's own config defines (global and system config are
// already off in neutral mode). A worker can name any driver in a
// .gitattributes it writes, so each defined one gets an empty clean, smudge
// and process command, which git treats as "no filter", and required=false,
// so the missing filter is not an error.
//
// The overrides travel as GIT_CONFIG_COUNT/KEY/VALUE rather than -c, because
// a driver name may contain '=' which -c cannot express, and because git
// hands the environment on to the git processes it starts.
func (g *Git) filterOverrides(ctx context.Context, dir string, env []string) ([]string, error) {
	var argv []string
	if dir != "" {
		argv = append(argv, "-C", dir)
	}
	argv = append(argv, "config", "-z", "--get-regexp", `^filter\.`)
	out, err := g.exec(ctx, argv, env)
	if err != nil {
		if exitCodeOf(err) == 1 { // no filter.* keys at all
			return nil, nil
		}
		return nil, fmt.Errorf("list filter drivers to neutralise in %s: %w", dir, err)
	}
	names := filterNames(out)
	if len(names) == 0 {
		return nil, nil
	}
	var kv []string
	i := 0
	for _, name := range names {
		for _, set := range [][2]string{{"clean", ""}, {"smudge", ""}, {"process", ""}, {"required", "false"}} {
			n := strconv.Itoa(i)
			kv = append(kv, "GIT_CONFIG_KEY_"+n+"=filter."+name+"."+set[0], "GIT_CONFIG_VALUE_"+n+"="+set[1])
			i++
		}
	}
	return append(kv, "GIT_CONFIG_COUNT="+strconv.Itoa(i)), nil
}

// filterNames extracts the distinct driver names from the output of
// git config -z --get-regexp '^filter\.' ("filter.<name>.<var>\n<value>\0"
// per entry). The name is everything between the first and the last dot.
func filterNames(out []byte) []string {
	seen := map[string]bool{}
	var names []string
	for _, entry := range bytes.Split(out, []byte{0}) {
		key, _, _ := strings.Cut(string(entry), "\n")
		rest, ok := strings.CutPrefix(key, "filter.")
		if !ok {
			continue
		}
		dot := strings.LastIndexByte(rest, '.')
		if dot <= 0 {
			continue
		}
		name := rest[:dot]
		if !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	return names
}
