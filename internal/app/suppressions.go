package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/contactd/contactd/internal/suppression"
)

// cmdSuppressionsRemove lifts the suppression of one email or phone of an erased person in an
// account (or its sandbox, --test): contacts may have it again. The list keeps only keyed
// hashes, so it cannot be listed; the operator names the value.
func cmdSuppressionsRemove(ctx context.Context, c *cmdline) error {
	kind, value := suppression.Email, *c.email
	switch {
	case *c.account == "":
		return errors.New("--account is required")
	case (*c.email == "") == (*c.phone == ""):
		return errors.New("give one of --email and --phone")
	case *c.phone != "":
		kind, value = suppression.Phone, *c.phone
	}
	return withServices(ctx, c, func(s *Services) error {
		id, err := c.accountID(ctx, s)
		if err != nil {
			return err
		}
		lifted, err := s.Suppressions.Remove(ctx, id, kind, value)
		if err != nil {
			return err
		}
		if !lifted {
			return fmt.Errorf("%s does not suppress this %s", *c.account, kind)
		}
		fmt.Fprintf(c.stderr, "lifted: contacts of %s may have this %s again\n", *c.account, kind)
		return nil
	})
}

// accountID is the account --account names, or its sandbox with --test.
func (c *cmdline) accountID(ctx context.Context, s *Services) (uuid.UUID, error) {
	id, err := s.Auth.AccountByName(ctx, *c.account)
	if err != nil || !*c.test {
		return id, err
	}
	sandbox, ok, err := s.Auth.Sandbox(ctx, id)
	if err != nil {
		return uuid.Nil, err
	}
	if !ok {
		return uuid.Nil, fmt.Errorf("%s has no sandbox yet: make a test key first (keys create --test)", *c.account)
	}
	return sandbox, nil
}
