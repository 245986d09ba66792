package bench

import (
	"strings"
	"testing"
)

func TestParseModelSpecs(t *testing.T) {
	t.Parallel()
	specs, err := ParseModelSpecs("qwen, llama@openai=http://h:1/v1#4 ,org/m@x@anthropic,deep=http://a=b#2", "openai", "http://def/v1")
	if err != nil {
		t.Fatal(err)
	}
	want := []ModelSpec{
		{Raw: "qwen", Model: "qwen", Provider: "openai", BaseURL: "http://def/v1", Slots: 1},
		{Raw: "llama@openai=http://h:1/v1#4", Model: "llama", Provider: "openai", BaseURL: "http://h:1/v1", Slots: 4},
		// The last '@' splits the provider off; the first '=' the URL.
		{Raw: "org/m@x@anthropic", Model: "org/m@x", Provider: "anthropic", BaseURL: "http://def/v1", Slots: 1},
		{Raw: "deep=http://a=b#2", Model: "deep", Provider: "openai", BaseURL: "http://a=b", Slots: 2},
	}
	if len(specs) != len(want) {
		t.Fatalf("got %d specs: %+v", len(specs), specs)
	}
	for i := range want {
		if specs[i] != want[i] {
			t.Errorf("spec %d = %+v, want %+v", i, specs[i], want[i])
		}
	}
	// No defaults: the run's own apply.
	specs, err = ParseModelSpecs("m", "", "")
	if err != nil || specs[0].Provider != "" || specs[0].BaseURL != "" {
		t.Fatalf("%+v %v", specs, err)
	}
}

func TestParseModelSpecsRefusals(t *testing.T) {
	t.Parallel()
	for list, want := range map[string]string{
		"":                          "--models is required",
		" , ":                       "--models is required",
		"@openai":                   "names no model",
		"m#0":                       "at least 1",
		"m#x":                       "at least 1",
		"m@bard":                    "must be openai or anthropic",
		"a=http://s#2,b=http://s#3": "different slots",
	} {
		if _, err := ParseModelSpecs(list, "openai", ""); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", list, err, want)
		}
	}
}
