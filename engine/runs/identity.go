package runs

import (
	"context"
	"strings"

	"github.com/dirtywork/dirtywork/gitops"
)

// Identity is the author and committer of the commits the store makes.
type Identity struct{ Name, Email string }

// fallbackIdentity signs commits when the operator configured none.
var fallbackIdentity = Identity{Name: "dirtywork", Email: "dirtywork@localhost"}

// operatorIdentity reads user.name and user.email from the operator's
// configuration as git sees it in repo (system, global, the repository's
// own config: none of it the worker's to write), each falling back to
// dirtywork's.
func (s *Store) operatorIdentity(ctx context.Context, repo string) Identity {
	get := func(key string) string {
		out, err := s.git.Run(ctx, gitops.Call{Dir: repo, Args: []string{"config", "--get", key}})
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(out))
	}
	id := Identity{Name: get("user.name"), Email: get("user.email")}
	if id.Name == "" {
		id.Name = fallbackIdentity.Name
	}
	if id.Email == "" {
		id.Email = fallbackIdentity.Email
	}
	return id
}
