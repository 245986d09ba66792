package diff

import (
	"path"
	"strings"
)

// generatedDirs are directories whose contents a tool writes, never a
// person: caches, dependency trees and build outputs.
var generatedDirs = map[string]bool{
	"__pycache__": true, ".pytest_cache": true, ".mypy_cache": true, ".ruff_cache": true, ".tox": true, ".nox": true,
	"node_modules": true, ".next": true, ".nuxt": true, ".parcel-cache": true, ".turbo": true,
	".gradle": true, ".cache": true, "target": true, "build": true, "dist": true, "out": true,
	".venv": true, "venv": true, ".eggs": true, "coverage": true, ".nyc_output": true, "htmlcov": true,
}

// generatedExts are file types a compiler or an interpreter writes.
var generatedExts = map[string]bool{
	".pyc": true, ".pyo": true, ".o": true, ".obj": true, ".a": true, ".so": true, ".dylib": true, ".dll": true,
	".class": true, ".exe": true, ".test": true, ".coverage": true,
}

// generatedNames are single files tools leave behind.
var generatedNames = map[string]bool{".DS_Store": true, "Thumbs.db": true, ".coverage": true}

// Generated reports whether p (slash-separated, relative to the
// repository) looks written by a tool rather than a person: a cache,
// a dependency tree, a build output or a compiled file. Mission control
// leaves such files out of an accept by default and shows them as left
// out; the reviewer can still include them.
func Generated(p string) bool {
	p = strings.TrimPrefix(path.Clean("/"+p), "/")
	base := path.Base(p)
	if generatedNames[base] || generatedExts[path.Ext(base)] || strings.HasSuffix(base, ".egg-info") {
		return true
	}
	for dir := range strings.SplitSeq(path.Dir(p), "/") {
		if generatedDirs[dir] || strings.HasSuffix(dir, ".egg-info") {
			return true
		}
	}
	return false
}
