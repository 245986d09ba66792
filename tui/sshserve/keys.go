// Package sshserve serves mission control to SSH clients: public-key
// authentication only, against the operator's authorized keys, each key
// with a role (watch or review); a host key kept on disk; one program per
// session, sized to the client's terminal. What a role may do is enforced
// by the program the caller builds for it (the TUI's read-only option);
// this package decides who connects and with which role.
package sshserve

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	gossh "golang.org/x/crypto/ssh"
)

// Role is what an authorized key may do in mission control.
type Role int

// Roles, weakest first.
const (
	// Watch sees everything and changes nothing.
	Watch Role = iota + 1
	// Review may do everything the local mission control does.
	Review
)

func (r Role) String() string {
	switch r {
	case Watch:
		return "watch"
	case Review:
		return "review"
	}
	return "none"
}

// KeyFile is an authorized_keys file and the role its keys get.
type KeyFile struct {
	Path string
	Role Role
}

// Keys are the authorized public keys and their roles.
type Keys struct {
	roles map[string]Role // by the key's wire form
	// Skipped says which lines were left out, and why (keys with options).
	Skipped []string
}

// LoadKeys reads the key files, in OpenSSH authorized_keys format. A key
// in several files gets the strongest of their roles. A file that cannot
// be read, a line that is not a public key, or no key at all is an error:
// the server never starts open to everyone. A key line with options
// (from=, command=, restrict, cert-authority…) is left out and named in
// Skipped, as its options would not be honoured here.
func LoadKeys(files ...KeyFile) (*Keys, error) {
	k := &Keys{roles: map[string]Role{}}
	for _, f := range files {
		if err := k.read(f); err != nil {
			return nil, err
		}
	}
	if len(k.roles) == 0 {
		names := make([]string, 0, len(files))
		for _, f := range files {
			names = append(names, f.Path)
		}
		return nil, fmt.Errorf("no usable public key in %s: nobody could connect", strings.Join(names, ", "))
	}
	return k, nil
}

func (k *Keys) read(f KeyFile) error {
	if f.Role != Watch && f.Role != Review {
		return fmt.Errorf("%s: unknown role %d", f.Path, f.Role)
	}
	data, err := os.ReadFile(f.Path)
	if err != nil {
		return fmt.Errorf("read authorized keys: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		pub, _, options, _, err := gossh.ParseAuthorizedKey([]byte(line))
		if err != nil {
			return fmt.Errorf("%s:%d: not a public key line: %w", f.Path, n, err)
		}
		if len(options) > 0 {
			k.Skipped = append(k.Skipped, fmt.Sprintf("%s:%d: key with options (%s) left out", f.Path, n, strings.Join(options, ",")))
			continue
		}
		id := string(pub.Marshal())
		if f.Role > k.roles[id] {
			k.roles[id] = f.Role
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s: %w", f.Path, err)
	}
	return nil
}

// Role returns the role of pub; ok is false for a key not authorized.
// A certificate is looked up as itself, never as the key it certifies.
func (k *Keys) Role(pub gossh.PublicKey) (Role, bool) {
	if k == nil || pub == nil {
		return 0, false
	}
	r, ok := k.roles[string(pub.Marshal())]
	return r, ok
}

// Len is the number of authorized keys.
func (k *Keys) Len() int { return len(k.roles) }

// errNoKeys is returned by New without keys.
var errNoKeys = errors.New("no authorized keys: the server would let everyone in")
