package host

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeToolchains makes a cargo and an nvm home under home, each with
// what runs the toolchain and what must not be read: a registry token
// (0600, and a legacy world-readable one), a private file in an exposed
// subdirectory, and a global npmrc with a token (0644).
func fakeToolchains(t *testing.T, home string) {
	t.Helper()
	cargo, nvm := filepath.Join(home, ".cargo"), filepath.Join(home, ".nvm")
	files := []struct {
		path, content string
		mode          os.FileMode
	}{
		{filepath.Join(cargo, "bin", "cargo"), "#!/bin/sh\necho cargo ran\n", 0o755},
		{filepath.Join(cargo, "credentials.toml"), "token = \"TOKEN-CREDENTIALS\"\n", 0o600},
		{filepath.Join(cargo, "credentials"), "token = \"TOKEN-LEGACY\"\n", 0o644},
		{filepath.Join(cargo, "config.toml"), "[build]\n", 0o644},
		{filepath.Join(cargo, "registry", "index", "entry"), "index entry\n", 0o644},
		{filepath.Join(cargo, "registry", "private.txt"), "TOKEN-PRIVATE\n", 0o600},
		{filepath.Join(nvm, "nvm.sh"), "# nvm\n", 0o644},
		{filepath.Join(nvm, "versions", "node", "v20.0.0", "bin", "node"), "#!/bin/sh\necho node ran\n", 0o755},
		{filepath.Join(nvm, "versions", "node", "v20.0.0", "etc", "npmrc"), "//registry.npmjs.org/:_authToken=TOKEN-NPM\n", 0o644},
		{filepath.Join(nvm, ".cache", "bin", "node-v21.tar.xz"), "tarball\n", 0o644},
	}
	for _, f := range files {
		writeFile(t, f.path, f.content)
		if err := os.Chmod(f.path, f.mode); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPlanToolchains: each root shows only its needed entries; private
// files in them are left to the kernel or covered, by how the worker
// relates to them; files that may hold credentials are covered either way.
func TestPlanToolchains(t *testing.T) {
	home := t.TempDir()
	fakeToolchains(t, home)
	// A private directory two levels down, and a private file three
	// levels down, which the walk does not reach.
	writeFile(t, filepath.Join(home, ".cargo", "registry", "cache", "secret", "f"), "x")
	if err := os.Chmod(filepath.Join(home, ".cargo", "registry", "cache", "secret"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(home, ".cargo", "registry", "index", "deep", "f"), "x")
	if err := os.Chmod(filepath.Join(home, ".cargo", "registry", "index", "deep", "f"), 0o600); err != nil {
		t.Fatal(err)
	}
	cargo, nvm := filepath.Join(home, ".cargo"), filepath.Join(home, ".nvm")
	env := map[string]string{"HOME": home}
	npmrc := filepath.Join(nvm, "versions", "node", "v20.0.0", "etc", "npmrc")
	for _, c := range []struct {
		name        string
		kernelHides bool
		private     string
		hidden      []string
	}{
		{"root operator", true, privateUnreadable, []string{npmrc}},
		{"non-root operator", false, privateCovered, []string{
			filepath.Join(cargo, "registry", "cache", "secret"), filepath.Join(cargo, "registry", "private.txt"), npmrc,
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := planToolchains(env, home, true, c.kernelHides)
			if p.private != c.private {
				t.Errorf("private %q, want %q", p.private, c.private)
			}
			wantExposed := []string{
				filepath.Join(cargo, "bin"), filepath.Join(cargo, "config.toml"), filepath.Join(cargo, "registry"),
				filepath.Join(nvm, "nvm.sh"), filepath.Join(nvm, "versions"),
			}
			if !slices.Equal(p.exposed, wantExposed) {
				t.Errorf("exposed\n got %q\nwant %q", p.exposed, wantExposed)
			}
			if !slices.Equal(p.hidden, c.hidden) {
				t.Errorf("hidden\n got %q\nwant %q", p.hidden, c.hidden)
			}
			if len(p.roots) != 2 || p.roots[0].Var != "CARGO_HOME" || p.roots[1].Var != "NVM_DIR" {
				t.Fatalf("roots %+v", p.roots)
			}
			withheld := strings.Join(append(p.roots[0].Withheld, p.roots[1].Withheld...), " ")
			for _, w := range []string{"credentials.toml", filepath.Join(cargo, "credentials"), filepath.Join(nvm, ".cache"), npmrc} {
				if !strings.Contains(withheld, w) {
					t.Errorf("withheld %q lacks %s", withheld, w)
				}
			}
		})
	}
	// Without a jail, nothing is withheld, and the account says so.
	p := planToolchains(env, home, false, false)
	if p.private != privateReadable || len(p.exposed) != 0 || len(p.roots) != 2 || !slices.Equal(p.roots[0].Exposed, []string{cargo}) {
		t.Errorf("no jail: %+v", p)
	}
}

// TestPlanToolchainsBounds: a root with more private files than can be
// covered is withheld whole rather than shown with some uncovered.
func TestPlanToolchainsBounds(t *testing.T) {
	home := t.TempDir()
	bin := filepath.Join(home, ".cargo", "bin")
	for i := range maxPrivateCovers + 1 {
		f := filepath.Join(bin, "k"+strings.Repeat("x", i))
		writeFile(t, f, "x")
		if err := os.Chmod(f, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p := planToolchains(map[string]string{}, home, true, false)
	if len(p.exposed) != 0 || len(p.hidden) != 0 || !slices.Contains(p.roots[0].Withheld, bin) {
		t.Errorf("got %+v", p)
	}
}

// TestToolchainsExposeOnlyWhatRunsThem: in the jail, the toolchains run,
// and no token or private file of theirs can be read; run_start's account
// lists what was exposed and what withheld.
func TestToolchainsExposeOnlyWhatRunsThem(t *testing.T) {
	requireJail(t)
	r := newTestRepo(t)
	fakeToolchains(t, r.home)
	w := open(t, r.config())
	for command, want := range map[string]string{
		`"$CARGO_HOME/bin/cargo"`:                   "cargo ran\n",
		`"$NVM_DIR/versions/node/v20.0.0/bin/node"`: "node ran\n",
		`cat "$CARGO_HOME/registry/index/entry"`:    "index entry\n",
		`ls -A "$CARGO_HOME"`:                       "bin\nconfig.toml\nregistry\n",
		`ls -A "$NVM_DIR"`:                          "nvm.sh\nversions\n",
	} {
		if out, code := run(t, w, command); code != 0 || out != want {
			t.Errorf("%s: exit %d %q, want %q", command, code, out, want)
		}
	}
	for _, command := range []string{
		`cat "$CARGO_HOME/credentials.toml"`, `cat "$CARGO_HOME/credentials"`,
		`cat "$CARGO_HOME/registry/private.txt"`, `cat "$NVM_DIR/versions/node/v20.0.0/etc/npmrc"`,
		`grep -r TOKEN "$CARGO_HOME" "$NVM_DIR"`,
	} {
		if out, code := run(t, w, command); code == 0 || strings.Contains(out, "TOKEN") {
			t.Errorf("%s: exit %d %q; want refused", command, code, out)
		}
	}
	info := w.Info()
	if info.ToolchainPrivate != privateUnreadable && info.ToolchainPrivate != privateCovered {
		t.Errorf("toolchain_private %q", info.ToolchainPrivate)
	}
	var cargo Toolchain
	for _, tc := range info.Toolchains {
		if tc.Var == "CARGO_HOME" {
			cargo = tc
		}
	}
	if len(cargo.Exposed) != 3 || !slices.Contains(cargo.Withheld, filepath.Join(cargo.Root, "credentials.toml")) {
		t.Errorf("run_start's account of CARGO_HOME: %+v", cargo)
	}
}
