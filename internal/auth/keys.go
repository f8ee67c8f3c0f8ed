// Package auth owns API keys: it generates them, stores only their SHA-256 hashes, and
// resolves the x-api-key of a request to the account it belongs to.
package auth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/secret"
	"github.com/contactd/contactd/internal/store"
)

const (
	keyPrefix   = "ck_"
	keyBodyLen  = 43 // 32 random bytes in base62
	visibleLen  = 8  // characters of the body kept in clear as the key's prefix
	base62Chars = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
)

// ErrUnauthorized is the answer to a missing, malformed, unknown or revoked key.
var ErrUnauthorized = apperr.New(apperr.KindUnauthorized, "Unauthorized", "missing or invalid x-api-key")

// Principal is who is calling: the account and the key used.
type Principal struct {
	AccountID uuid.UUID
	KeyID     uuid.UUID
	KeyName   string
	KeyPrefix string
}

// Key is a stored key as `keys list` shows it; the key itself is never stored.
type Key struct {
	Name       string
	Prefix     string
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
}

// Service manages accounts and keys.
type Service struct {
	store *store.Store
	now   func() time.Time
	// touched remembers when this process last recorded each key's use, so the hot path
	// writes last_used_at at most once per TouchEvery per key.
	touched sync.Map // uuid.UUID -> time.Time
	cache   *keyCache
}

// TouchEvery is the resolution of a key's last-used time.
const TouchEvery = time.Minute

// NewService returns a Service on st.
func NewService(st *store.Store, now func() time.Time) *Service {
	return &Service{store: st, now: now, cache: newKeyCache()}
}

// CreateAccount creates an account with a unique name.
func (s *Service) CreateAccount(ctx context.Context, name string) (uuid.UUID, error) {
	id := uuid.Must(uuid.NewV7())
	err := s.store.InTx(ctx, func(tx store.Tx) error {
		_, err := tx.AccountInsert(ctx, db.AccountInsertParams{AccountID: id, Name: name, CreatedAt: s.now()})
		return err
	})
	return id, err
}

// AccountByName finds an account's id by its name.
func (s *Service) AccountByName(ctx context.Context, name string) (uuid.UUID, error) {
	var id uuid.UUID
	err := s.store.Read(ctx, func(q *db.Queries) error {
		a, err := q.AccountGetByName(ctx, name)
		id = a.AccountID
		return err
	})
	if errors.Is(err, apperr.ErrNoRows) {
		return id, fmt.Errorf("no account named %q", name)
	}
	return id, err
}

// CreateKey makes a new key for the account and returns it; it cannot be shown again.
func (s *Service) CreateKey(ctx context.Context, accountID uuid.UUID, name string) (string, error) {
	key, err := generateKey()
	if err != nil {
		return "", err
	}
	err = s.store.InTx(ctx, func(tx store.Tx) error {
		_, err := tx.KeyInsert(ctx, db.KeyInsertParams{
			AccountID: accountID, KeyID: uuid.Must(uuid.NewV7()), Name: name,
			Prefix: visiblePrefix(key), KeyHash: hashBytes(key), CreatedAt: s.now(),
		})
		return err
	})
	return key, err
}

// ListKeys lists an account's keys, oldest first.
func (s *Service) ListKeys(ctx context.Context, account string) ([]Key, error) {
	var rows []db.ApiKey
	err := s.store.Read(ctx, func(q *db.Queries) (err error) {
		rows, err = q.KeyListByAccount(ctx, account)
		return err
	})
	keys := make([]Key, len(rows))
	for i, r := range rows {
		keys[i] = Key{Name: r.Name, Prefix: r.Prefix, CreatedAt: r.CreatedAt, LastUsedAt: r.LastUsedAt, RevokedAt: r.RevokedAt}
	}
	return keys, err
}

// RevokeKey revokes the key with the given visible prefix; it stops working at once, in
// every process: the revocation is announced to their key caches in the same transaction.
func (s *Service) RevokeKey(ctx context.Context, prefix string) error {
	var revoked []uuid.UUID
	err := s.store.InTx(ctx, func(tx store.Tx) error {
		rows, err := tx.KeyRevokeByPrefix(ctx, db.KeyRevokeByPrefixParams{Prefix: prefix, RevokedAt: ptr(s.now())})
		for _, r := range rows {
			if err == nil {
				revoked = append(revoked, r.KeyID)
				err = tx.KeyRevokedNotify(ctx, r.KeyID)
			}
		}
		return err
	})
	for _, id := range revoked {
		s.cache.Forget(keyIs(id))
	}
	n := len(revoked)
	if err == nil && n == 0 {
		return fmt.Errorf("no active key with prefix %q", prefix)
	}
	return err
}

// Authenticate resolves a presented key to its principal.
func (s *Service) Authenticate(ctx context.Context, key string) (Principal, error) {
	if !wellFormed(key) {
		return Principal{}, ErrUnauthorized
	}
	h := hash(key)
	now := s.now()
	if p, ok := s.cache.Get(h, now); ok {
		s.touch(ctx, p)
		return p, nil
	}
	gen := s.cache.Generation()
	var p Principal
	err := s.store.Read(ctx, func(q *db.Queries) error {
		row, err := q.KeyAuthenticate(ctx, h[:])
		p = Principal{AccountID: row.AccountID, KeyID: row.KeyID, KeyName: row.Name, KeyPrefix: row.Prefix}
		return err
	})
	if errors.Is(err, apperr.ErrNoRows) {
		return Principal{}, ErrUnauthorized
	}
	if err == nil {
		s.cache.Put(h, p, gen, now)
		s.touch(ctx, p)
	}
	return p, err
}

// touch records that the key was used, cheaply: one UPDATE per key per TouchEvery per
// process, and a failure to record it does not fail the request.
func (s *Service) touch(ctx context.Context, p Principal) {
	now := s.now()
	if last, ok := s.touched.Load(p.KeyID); ok && now.Sub(last.(time.Time)) < TouchEvery {
		return
	}
	s.touched.Store(p.KeyID, now)
	_ = s.store.Read(ctx, func(q *db.Queries) error {
		return q.KeyTouch(ctx, db.KeyTouchParams{AccountID: p.AccountID, KeyID: p.KeyID, UsedAt: now})
	})
}

func wellFormed(key string) bool {
	if len(key) != len(keyPrefix)+keyBodyLen || !strings.HasPrefix(key, keyPrefix) {
		return false
	}
	for _, c := range key[len(keyPrefix):] {
		if !strings.ContainsRune(base62Chars, c) {
			return false
		}
	}
	return true
}

func generateKey() (string, error) { return keyPrefix + secret.Base62(32), nil }

func visiblePrefix(key string) string { return key[:len(keyPrefix)+visibleLen] }

func hash(key string) [32]byte { return sha256.Sum256([]byte(key)) }

func ptr[T any](v T) *T { return &v }

type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the request's principal. Handlers behind the auth middleware always
// have one; ok is false elsewhere.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

func hashBytes(key string) []byte {
	h := hash(key)
	return h[:]
}
