package main

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/spf13/pflag"

	"github.com/dirtywork/dirtywork/engine/provider/anthropic"
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
	return applyDefaultsSkipping(flags, env, path, nil)
}

// applyDefaultsSkipping is applyDefaults for a command that has only some
// of run's flags: the config file's keys in ignore (run flags it does not
// take) are passed over instead of refused.
func applyDefaultsSkipping(flags *pflag.FlagSet, env map[string]string, path string, ignore map[string]bool) (fromConfig map[string]bool, err error) {
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
		if ignore[key] {
			continue
		}
		if key == apiKeysTable {
			if _, err := apiKeysOf(raw); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", path, line, err)
			}
			continue
		}
		f := flags.Lookup(key)
		if f == nil || f.Hidden || key == "help" || key == detachFlag {
			return nil, fmt.Errorf("%s:%d: unknown setting '%s' (settings are the long names of 'dirtywork run' flags)", path, line, key)
		}
		if f.Changed {
			continue
		}
		text, ok := scalarText(raw)
		if list, isList := raw.([]any); isList && f.Value.Type() == "stringArray" {
			// A list setting (allow-host = ["a", "b"]) is one comma list.
			text, ok = stringList(list)
		}
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

// stringList renders a TOML array of strings as one comma list.
func stringList(list []any) (string, bool) {
	parts := make([]string, 0, len(list))
	for _, v := range list {
		s, ok := v.(string)
		if !ok {
			return "", false
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ","), true
}

// keyLine finds the line a top-level key is set on (1-based; 0 if not
// found). The TOML decoder reports positions only for syntax errors.
func keyLine(data []byte, key string) int {
	re := regexp.MustCompile(`^\s*(\[\s*)?("?)` + regexp.QuoteMeta(key) + `("?)\s*[=\]]`)
	for i, line := range strings.Split(string(data), "\n") {
		if re.MatchString(line) {
			return i + 1
		}
	}
	return 0
}

// apiKeysTable is the config file's table of model-server keys, by base
// URL: a key is sent only to the server it was given for.
//
//	[api-keys]
//	"https://api.example.com/v1" = "sk-..."
//	"http://gpu-box:8000/v1" = { env = "GPU_BOX_KEY" }
const apiKeysTable = "api-keys"

// apiKeyEnv is the one variable whose key is sent to any --base-url: the
// operator set it for dirtywork. OPENAI_API_KEY is not read (a real
// OpenAI key must not reach a LAN server); tie it to its URL in the
// config file instead.
const apiKeyEnv = "DIRTYWORK_API_KEY"

// apiKeysOf checks the api-keys table and returns it as base URL (in
// normalURL form) -> key source: the key itself, or "$NAME" for a key read
// from the environment variable NAME.
func apiKeysOf(raw any) (map[string]string, error) {
	table, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("'%s' must be a table of base URL = key", apiKeysTable)
	}
	keys := map[string]string{}
	for u, v := range table {
		norm, err := normalURL(u)
		if err != nil {
			return nil, fmt.Errorf("'%s': %w", apiKeysTable, err)
		}
		switch x := v.(type) {
		case string:
			keys[norm] = x
		case map[string]any:
			name, ok := x["env"].(string)
			if !ok || len(x) != 1 || name == "" {
				return nil, fmt.Errorf("'%s': the key for %s must be a string or { env = \"VARIABLE\" }", apiKeysTable, u)
			}
			keys[norm] = "$" + name
		default:
			return nil, fmt.Errorf("'%s': the key for %s must be a string or { env = \"VARIABLE\" }", apiKeysTable, u)
		}
	}
	return keys, nil
}

// normalURL is u as a key of the api-keys table: scheme and host lower
// case, no trailing slash, no query or fragment.
func normalURL(u string) (string, error) {
	p, err := url.Parse(strings.TrimSpace(u))
	if err != nil || p.Scheme == "" || p.Host == "" {
		return "", fmt.Errorf("%q is not a base URL such as http://host:port/v1", u)
	}
	return strings.ToLower(p.Scheme) + "://" + strings.ToLower(p.Host) + strings.TrimRight(p.Path, "/"), nil
}

// modelServerKey is the key run sends to the model server at baseURL.
// The Anthropic API's comes from ANTHROPIC_API_KEY (E-60), read here in
// dirtywork's own process and sent, as x-api-key, to the base URL alone;
// an OpenAI-compatible server's is apiKeyFor's. Neither key ever reaches
// the other provider's server.
func modelServerKey(providerName, baseURL, configFile string) (key, unsent string, err error) {
	if providerName == anthropic.Name {
		return os.Getenv(anthropic.KeyEnv), "", nil
	}
	return apiKeyFor(baseURL, configFile)
}

// apiKeyFor is the bearer token to send to baseURL: DIRTYWORK_API_KEY, else
// the config file's key for exactly that base URL, else none. unsent names
// a variable holding a key that is deliberately not sent, for a hint.
func apiKeyFor(baseURL, configFile string) (key, unsent string, err error) {
	if k := os.Getenv(apiKeyEnv); k != "" {
		return k, "", nil
	}
	if os.Getenv("OPENAI_API_KEY") != "" {
		unsent = "OPENAI_API_KEY"
	}
	if configFile == "" || baseURL == "" {
		return "", unsent, nil
	}
	data, err := os.ReadFile(configFile)
	if errors.Is(err, os.ErrNotExist) {
		return "", unsent, nil
	}
	if err != nil {
		return "", "", fmt.Errorf("read config file: %w", err)
	}
	var values map[string]any
	if _, err := toml.Decode(string(data), &values); err != nil {
		return "", "", fmt.Errorf("%s: %w", configFile, err)
	}
	raw, ok := values[apiKeysTable]
	if !ok {
		return "", unsent, nil
	}
	keys, err := apiKeysOf(raw)
	if err != nil {
		return "", "", fmt.Errorf("%s:%d: %w", configFile, keyLine(data, apiKeysTable), err)
	}
	// An unusable URL has no key; preflight reports the URL itself.
	norm, _ := normalURL(baseURL)
	src, ok := keys[norm]
	if norm == "" || !ok {
		return "", unsent, nil
	}
	if name, fromEnv := strings.CutPrefix(src, "$"); fromEnv {
		if os.Getenv(name) == "" {
			return "", "", fmt.Errorf("%s: the key for %s comes from %s, which is not set", configFile, baseURL, name)
		}
		return os.Getenv(name), "", nil
	}
	return src, "", nil
}
