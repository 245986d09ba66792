package diff

import "testing"

func TestGenerated(t *testing.T) {
	for p, want := range map[string]bool{
		"src/__pycache__/app.cpython-311.pyc": true,
		"app.pyc":                             true,
		"web/node_modules/left-pad/index.js":  true,
		"dist/app.js":                         true,
		"pkg/build/out.o":                     true,
		"mylib.egg-info/PKG-INFO":             true,
		".DS_Store":                           true,
		"src/app.py":                          false,
		"docs/building.md":                    false,
		"builder/main.go":                     false,
		"src/distance.py":                     false,
		"README.md":                           false,
		"../escape/__pycache__x":              false,
	} {
		if got := Generated(p); got != want {
			t.Errorf("Generated(%q) = %v, want %v", p, got, want)
		}
	}
}
