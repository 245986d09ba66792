//go:build !nocarry

package carried

import "embed"

// embedded is the builds directory as it was when this binary was built.
//
//go:embed builds
var embedded embed.FS

// carries reports whether this build embeds the builds directory.
const carries = true
