package sandbox

import (
	"fmt"

	units "github.com/docker/go-units"
)

// ParseSize reads a size the way docker reads --memory and --tmpfs sizes,
// as dirtywork 0.9.1 passed them to docker: a number, whole or decimal,
// with an optional unit k, m, g, t or p (binary multiples, any case),
// optionally followed by "i" and/or "b" ("512m", "1.5g", "4gb", "4GiB");
// a bare number is bytes. The size must come to at least one byte.
func ParseSize(s string) (int64, error) {
	n, err := units.RAMInBytes(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("'%s' is not a size such as 512m, 1.5g or 4gb", s)
	}
	return n, nil
}
