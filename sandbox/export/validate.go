package export

import "io"

// Validate reads the tar stream r to its end and checks it without
// touching the filesystem, member by member as it arrives. It accepts
// exactly the streams Extract accepts, with the same Summary, and refuses
// the others with the same *Refusal:
//
//   - only regular files, directories, symlinks and hard links to an
//     earlier file (per-member PAX headers are fine, a PAX global header
//     anywhere is not); FIFOs and devices, and hard links to them, are
//     left out and listed (Summary.SkippedSpecial);
//   - no absolute name, no empty, `.` or `..` component, no component
//     that is `.git` in any case;
//   - no member under a symlink or a file an earlier member made, and no
//     name twice (a directory may repeat);
//   - at most caps.MaxFiles members, and at most caps.MaxBytes both read
//     from the stream (headers included) and declared by the regular
//     files.
//
// On a refusal the Summary covers the members accepted before it, and r
// is left part-read: the caller stops its producer.
func Validate(r io.Reader, caps Caps) (Summary, error) {
	return walk(r, caps, nil)
}
