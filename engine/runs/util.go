package runs

import (
	"os"
	"os/user"

	"golang.org/x/sys/unix"
)

// userName is the login name of the current user, "" when unknown.
func userName() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return ""
}

// noFollow opens the last component without following a symlink.
const noFollow = unix.O_NOFOLLOW
