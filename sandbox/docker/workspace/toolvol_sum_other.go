//go:build !linux

package workspace

// rememberedKey: only a Linux build runs its own binary as the tool
// server; elsewhere the build is carried, in memory, and hashed there.
func rememberedKey(string) (string, int64, bool) { return "", 0, false }

// rememberKey: see rememberedKey.
func rememberKey(string, string, string) {}

// statLine: see rememberedKey.
func statLine(string) (string, bool) { return "", false }
