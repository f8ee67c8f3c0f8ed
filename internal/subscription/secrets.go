package subscription

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/platform/ids"
	"github.com/contactd/contactd/internal/platform/seal"
	"github.com/contactd/contactd/internal/platform/store"
	"github.com/contactd/contactd/internal/platform/token"
)

// RotationOverlap is how long a subscription's secret keeps signing deliveries after a
// rotation replaced it, so receivers can switch without rejecting any.
const RotationOverlap = 24 * time.Hour

// Secrets keeps the signing secrets: each subscription's Standard Webhooks secret (whsec_),
// and each account's client secret, which signs the original service's body-only
// fello-webhook-signature. They are stored sealed (package seal) and opened only to sign.
type Secrets struct {
	store *store.Store
	keys  *seal.Keyring
	now   func() time.Time
}

// NewSecrets returns the secrets kept in st under keys.
func NewSecrets(st *store.Store, keys *seal.Keyring, now func() time.Time) *Secrets {
	return &Secrets{store: st, keys: keys, now: now}
}

// The places secrets are sealed for (seal's additional data): a sealed value moved to
// another row does not open there.
func subscriptionPlace(account, sub uuid.UUID) string {
	return "webhook_subscriptions/" + account.String() + "/" + sub.String()
}

func clientPlace(account uuid.UUID) string { return "accounts.client_secret/" + account.String() }

// newSubscriptionSecret returns a new whsec_ secret and its sealed form for the subscription.
func (s *Secrets) newSubscriptionSecret(account, sub uuid.UUID) (plain, sealed string) {
	plain = "whsec_" + token.Base64(32)
	return plain, s.keys.Seal([]byte(plain), subscriptionPlace(account, sub))
}

// Rotated is a subscription's new secret, shown once.
type Rotated struct {
	SubscriptionID uuid.UUID
	Secret         string
	// PreviousUntil is when the replaced secret stops signing.
	PreviousUntil time.Time
}

// Rotate gives a subscription a new secret; the one it replaces signs deliveries too for
// RotationOverlap, and one replaced before that stops at once.
func (s *Secrets) Rotate(ctx context.Context, accountID uuid.UUID, rawID string) (Rotated, error) {
	id, ok := ids.Parse(rawID)
	if !ok {
		return Rotated{}, ErrNotFound
	}
	now := s.now()
	plain, sealed := s.newSubscriptionSecret(accountID, id)
	until := now.Add(RotationOverlap)
	err := s.store.InTx(ctx, func(tx store.Tx) error {
		row, err := tx.SubscriptionGet(ctx, db.SubscriptionGetParams{AccountID: accountID, SubscriptionID: id})
		if errors.Is(store.Translate(err), apperr.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		var previous *string
		if row.SecretSealed == nil && row.Secret != nil { // written in clear by an older contactd
			p := s.keys.Seal([]byte(*row.Secret), subscriptionPlace(accountID, id))
			previous = &p
		}
		_, err = tx.SubscriptionRotateSecret(ctx, db.SubscriptionRotateSecretParams{AccountID: accountID,
			SubscriptionID: id, SecretSealed: &sealed, PreviousSealed: previous, PreviousUntil: &until, Now: now})
		return err
	})
	if err != nil {
		return Rotated{}, err
	}
	return Rotated{SubscriptionID: id, Secret: plain, PreviousUntil: until}, nil
}

// Signing is what signs one delivery.
type Signing struct {
	// Current is the subscription's secret; Previous the one a rotation replaced, while it
	// still signs ("" otherwise).
	Current, Previous string
	// Client is the account's client secret, decoded: the HMAC key of fello-webhook-signature.
	Client []byte
}

// Sealed is a delivery's secrets as stored.
type Sealed struct {
	Account, Subscription uuid.UUID
	// InClear is a secret an older contactd wrote before secrets were sealed.
	InClear, Current, Previous *string
	PreviousUntil              *time.Time
	Client                     *string
}

// Open opens the secrets that sign a delivery now, creating the account's client secret if
// it has none yet. It fails rather than sign with a secret it cannot open.
func (s *Secrets) Open(ctx context.Context, in Sealed) (Signing, error) {
	var out Signing
	switch {
	case in.Current != nil:
		b, err := s.keys.Open(*in.Current, subscriptionPlace(in.Account, in.Subscription))
		if err != nil {
			return Signing{}, fmt.Errorf("open the subscription's secret: %w", err)
		}
		out.Current = string(b)
	case in.InClear != nil:
		out.Current = *in.InClear
	default:
		return Signing{}, errors.New("the subscription has no secret")
	}
	if in.Previous != nil && in.PreviousUntil != nil && s.now().Before(*in.PreviousUntil) {
		b, err := s.keys.Open(*in.Previous, subscriptionPlace(in.Account, in.Subscription))
		if err != nil {
			return Signing{}, fmt.Errorf("open the subscription's previous secret: %w", err)
		}
		out.Previous = string(b)
	}
	client, err := s.openClient(ctx, in.Account, in.Client)
	if err != nil {
		return Signing{}, err
	}
	out.Client, err = base64.StdEncoding.DecodeString(client)
	return out, err
}

// ClientSecret is the account's client secret, created on first use; rotate replaces it.
func (s *Secrets) ClientSecret(ctx context.Context, accountID uuid.UUID, rotate bool) (string, error) {
	if rotate {
		return s.setClient(ctx, accountID, false)
	}
	var sealed *string
	err := s.store.Do(ctx, func(q *db.Queries) (err error) {
		sealed, err = q.AccountClientSecret(ctx, accountID)
		return err
	})
	if err != nil {
		return "", err
	}
	return s.openClient(ctx, accountID, sealed)
}

func (s *Secrets) openClient(ctx context.Context, accountID uuid.UUID, sealed *string) (string, error) {
	if sealed == nil {
		return s.setClient(ctx, accountID, true)
	}
	b, err := s.keys.Open(*sealed, clientPlace(accountID))
	if err != nil {
		return "", fmt.Errorf("open the account's client secret: %w", err)
	}
	return string(b), nil
}

// setClient stores a new client secret, or, onlyIfUnset, the one that won a race to be first.
func (s *Secrets) setClient(ctx context.Context, accountID uuid.UUID, onlyIfUnset bool) (string, error) {
	plain := token.Base64(32)
	err := s.store.Do(ctx, func(q *db.Queries) (err error) {
		_, err = q.AccountClientSecretSet(ctx, db.AccountClientSecretSetParams{AccountID: accountID,
			ClientSecretSealed: ptr(s.keys.Seal([]byte(plain), clientPlace(accountID))), OnlyIfUnset: onlyIfUnset})
		return err
	})
	switch {
	case errors.Is(err, apperr.ErrNoRows) && onlyIfUnset:
		return s.ClientSecret(ctx, accountID, false) // another process set it first
	case err != nil:
		return "", err
	}
	return plain, nil
}

func ptr[T any](v T) *T { return &v }

// Check fails, saying what to do, when a stored secret is sealed under a key the keyring
// does not hold: contactd must not start with a wrong or missing key, and never sign with one.
func (s *Secrets) Check(ctx context.Context) error {
	var stored []string
	if err := s.store.Do(ctx, func(q *db.Queries) (err error) {
		stored, err = q.SecretKeyIDs(ctx)
		return err
	}); err != nil {
		return err
	}
	var missing []string
	for _, id := range stored {
		if !s.keys.Holds(id) {
			missing = append(missing, id)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	slices.Sort(missing)
	return fmt.Errorf("the database holds secrets sealed under key id %s, and no configured key has that id "+
		"(the current key's id is %s): CONTACTD_SECRET_KEY is wrong, or a key the secrets are still under is "+
		"missing from CONTACTD_SECRET_KEYS_OLD", strings.Join(missing, ", "), s.keys.CurrentID())
}

// KeyID is the id of the key secrets are sealed with now.
func (s *Secrets) KeyID() string { return s.keys.CurrentID() }

// ResealCounts says what Reseal moved to the current key.
type ResealCounts struct{ Subscriptions, Accounts int }

// Reseal seals every stored secret under the current key: those still in clear (written by
// an older contactd) and, unless onlyInClear, those under older keys (`contactd secrets
// rekey`). It runs beside live traffic: each row is rewritten only if it is still what was
// read, so a rotation in between wins.
func (s *Secrets) Reseal(ctx context.Context, onlyInClear bool) (ResealCounts, error) {
	var n ResealCounts
	var afterAccount, afterSub uuid.UUID
	for {
		var page []db.SubscriptionSecretsToSealRow
		err := s.store.Do(ctx, func(q *db.Queries) (err error) {
			page, err = q.SubscriptionSecretsToSeal(ctx, db.SubscriptionSecretsToSealParams{AfterAccount: afterAccount,
				AfterSubscription: afterSub, CurrentKeyID: s.keys.CurrentID(), PageSize: 500})
			return err
		})
		if err != nil {
			return n, err
		}
		for _, r := range page {
			afterAccount, afterSub = r.AccountID, r.SubscriptionID
			if onlyInClear && r.Secret == nil {
				continue
			}
			moved, err := s.resealSubscription(ctx, r)
			if err != nil {
				return n, err
			}
			n.Subscriptions += moved
		}
		if len(page) < 500 {
			break
		}
	}
	if onlyInClear {
		return n, nil
	}
	var after uuid.UUID
	for {
		var page []db.AccountSecretsToSealRow
		err := s.store.Do(ctx, func(q *db.Queries) (err error) {
			page, err = q.AccountSecretsToSeal(ctx, db.AccountSecretsToSealParams{AfterAccount: after, CurrentKeyID: s.keys.CurrentID(), PageSize: 500})
			return err
		})
		if err != nil {
			return n, err
		}
		for _, r := range page {
			after = r.AccountID
			b, err := s.keys.Open(r.ClientSecretSealed, clientPlace(r.AccountID))
			if err != nil {
				return n, fmt.Errorf("account %s: %w", r.AccountID, err)
			}
			var moved int64
			err = s.store.Do(ctx, func(q *db.Queries) (err error) {
				moved, err = q.AccountSecretReseal(ctx, db.AccountSecretResealParams{AccountID: r.AccountID,
					ClientSecretSealed: ptr(s.keys.Seal(b, clientPlace(r.AccountID))), OldClientSecretSealed: &r.ClientSecretSealed})
				return err
			})
			if err != nil {
				return n, err
			}
			n.Accounts += int(moved)
		}
		if len(page) < 500 {
			return n, nil
		}
	}
}

func (s *Secrets) resealSubscription(ctx context.Context, r db.SubscriptionSecretsToSealRow) (int, error) {
	place := subscriptionPlace(r.AccountID, r.SubscriptionID)
	reseal := func(sealed *string) (*string, error) {
		if sealed == nil {
			return nil, nil
		}
		b, err := s.keys.Open(*sealed, place)
		if err != nil {
			return nil, fmt.Errorf("subscription %s: %w", r.SubscriptionID, err)
		}
		return ptr(s.keys.Seal(b, place)), nil
	}
	var current *string
	var err error
	if r.SecretSealed != nil {
		if current, err = reseal(r.SecretSealed); err != nil {
			return 0, err
		}
	} else if r.Secret != nil {
		current = ptr(s.keys.Seal([]byte(*r.Secret), place))
	}
	previous, err := reseal(r.PreviousSecretSealed)
	if err != nil || current == nil {
		return 0, err
	}
	var moved int64
	err = s.store.Do(ctx, func(q *db.Queries) (err error) {
		moved, err = q.SubscriptionSecretsReseal(ctx, db.SubscriptionSecretsResealParams{AccountID: r.AccountID,
			SubscriptionID: r.SubscriptionID, SecretSealed: current, PreviousSecretSealed: previous,
			OldSecret: r.Secret, OldSecretSealed: r.SecretSealed, OldPreviousSecretSealed: r.PreviousSecretSealed})
		return err
	})
	return int(moved), err
}
