package workspace

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"strings"
)

// errExtractStopped stops the download once the extraction gave up.
var errExtractStopped = errors.New("extraction stopped reading")

// rebaseArchive copies the tar stream CopyFromContainer gives for /work
// (members named work/...) to w with the names relative to the tree, as
// export.Extract wants them: the root's own member is left out, and so is
// everything at or under a component named .git in any case, whose paths
// (one per such component) are appended to dropped. A hard link to a
// member left out shares its file, so it is left out too, and its own
// path appended to dropped: the daemon names a file's first path in the
// archive, which may well lie under .git. Everything else, whatever its
// type, passes on for Extract to judge.
func rebaseArchive(r io.Reader, w io.Writer, dropped *[]string) error {
	tr := tar.NewReader(r)
	tw := tar.NewWriter(w)
	seen := map[string]bool{}
	droppedLinks := map[string]bool{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read the exported archive: %w", err)
		}
		name, ok := rebaseName(hdr.Name)
		if !ok {
			continue
		}
		if git := gitComponent(name); git != "" {
			if !seen[git] {
				seen[git] = true
				*dropped = append(*dropped, git)
			}
			continue
		}
		if hdr.Typeflag == tar.TypeLink {
			target, _ := rebaseName(hdr.Linkname)
			if gitComponent(target) != "" || droppedLinks[target] {
				droppedLinks[name] = true
				*dropped = append(*dropped, name)
				continue
			}
			hdr.Linkname = target
		}
		hdr.Name = name
		// The writer picks the format the new name needs; stale path
		// records would be ignored, but drop them for clarity.
		hdr.Format = tar.FormatUnknown
		delete(hdr.PAXRecords, "path")
		delete(hdr.PAXRecords, "linkpath")
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("pass on exported member %q: %w", name, err)
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return fmt.Errorf("pass on exported member %q: %w", name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("finish the exported archive: %w", err)
	}
	return nil
}

// rebaseName strips the leading "work/" of an archive name; ok is false
// for the root itself. A name outside work/ is kept as it is, for Extract
// to refuse or place.
func rebaseName(name string) (string, bool) {
	rest, found := strings.CutPrefix(name, "work/")
	if !found {
		if name == "work" {
			return "", false
		}
		return name, true
	}
	if strings.Trim(rest, "/") == "" {
		return "", false
	}
	return rest, true
}

// gitComponent is the prefix of name up to its first component named .git
// in any case, or "".
func gitComponent(name string) string {
	parts := strings.Split(strings.TrimSuffix(name, "/"), "/")
	for i, p := range parts {
		if strings.EqualFold(p, ".git") {
			return strings.Join(parts[:i+1], "/")
		}
	}
	return ""
}
