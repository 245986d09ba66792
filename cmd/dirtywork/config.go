package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/spf13/pflag"
)

// configPath is where defaults for run flags live:
// $XDG_CONFIG_HOME/dirtywork/config.toml, else ~/.config/dirtywork/config.toml.
func configPath() string {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "dirtywork", "config.toml")
}

// applyDefaults gives every flag the user did not set its value from the
// environment (for the flags that have a variable) or else from the config
// file: precedence is flag > environment > config file > built-in. It
// returns the names of the flags it set from the config file. A malformed
// file, an unknown key or a bad value is an error naming the line.
func applyDefaults(flags *pflag.FlagSet, env map[string]string, path string) (fromConfig map[string]bool, err error) {
	fromConfig = map[string]bool{}
	for name, variable := range env {
		if f := flags.Lookup(name); f != nil && !f.Changed {
			if v := os.Getenv(variable); v != "" {
				if err := f.Value.Set(v); err != nil {
					return nil, fmt.Errorf("%s=%q is not a valid --%s: %w", variable, v, name, err)
				}
				f.Changed = true // the environment counts as given
			}
		}
	}
	if path == "" {
		return fromConfig, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return fromConfig, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read config file: %w", err)
	}
	var values map[string]any
	if _, err := toml.Decode(string(data), &values); err != nil {
		var perr toml.ParseError
		if errors.As(err, &perr) {
			return nil, fmt.Errorf("%s:%d: %s", path, perr.Position.Line, perr.Message)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for key, raw := range values {
		if _, ok := raw.(map[string]any); ok && key == "tui" {
			continue // mission control's section (see tui.go)
		}
		line := keyLine(data, key)
		f := flags.Lookup(key)
		if f == nil || f.Hidden || key == "help" {
			return nil, fmt.Errorf("%s:%d: unknown setting '%s' (settings are the long names of 'dirtywork run' flags)", path, line, key)
		}
		if f.Changed {
			continue
		}
		text, ok := scalarText(raw)
		if !ok {
			return nil, fmt.Errorf("%s:%d: '%s' must be a string, number or boolean", path, line, key)
		}
		if err := f.Value.Set(text); err != nil {
			return nil, fmt.Errorf("%s:%d: bad value for '%s': %w", path, line, key, err)
		}
		fromConfig[key] = true
	}
	return fromConfig, nil
}

// scalarText renders a TOML scalar as flag text.
func scalarText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case bool:
		return strconv.FormatBool(x), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return "", false
		}
		return strconv.FormatFloat(x, 'g', -1, 64), true
	}
	return "", false
}

// keyLine finds the line a top-level key is set on (1-based; 0 if not
// found). The TOML decoder reports positions only for syntax errors.
func keyLine(data []byte, key string) int {
	re := regexp.MustCompile(`^\s*("?)` + regexp.QuoteMeta(key) + `("?)\s*=`)
	for i, line := range strings.Split(string(data), "\n") {
		if re.MatchString(line) {
			return i + 1
		}
	}
	return 0
}
