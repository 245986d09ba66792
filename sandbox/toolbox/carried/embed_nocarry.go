//go:build nocarry

package carried

import "embed"

// embedded is empty in a build made to be carried (build tag nocarry):
// it runs as the tool server, which carries nothing.
var embedded embed.FS

// carries reports whether this build embeds the builds directory.
const carries = false
