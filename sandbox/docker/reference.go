package docker

import (
	"errors"
	"fmt"

	"github.com/distribution/reference"
)

// ErrInvalidReference: an image name the daemon would refuse, such as one
// with upper-case letters or spaces.
var ErrInvalidReference = errors.New("invalid image reference")

// CheckReference checks that ref can name an image dirtywork builds or
// imports: a valid reference without a digest (a digest names content
// that exists already; a new image cannot be given one).
func CheckReference(ref string) error {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return fmt.Errorf("%w %q: %w", ErrInvalidReference, ref, err)
	}
	if _, ok := named.(reference.Digested); ok {
		return fmt.Errorf("%w %q: a built image cannot be named by digest", ErrInvalidReference, ref)
	}
	return nil
}
