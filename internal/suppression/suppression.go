// Package suppression owns the suppression list: the emails and phones of erased people, which
// new contacts may not have until an operator lifts them. They are kept only as keyed hashes
// (HMAC-SHA256 of the account, the kind and the normalised value, under a random key sealed
// with the operator's key), so a copy of the database names no one, not even by guessing
// emails and hashing them.
package suppression

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/platform/seal"
	"github.com/contactd/contactd/internal/platform/store"
)

// ErrSuppressed refuses a contact whose email or phone belongs to an erased person.
var ErrSuppressed = apperr.New(apperr.KindConflict, "ContactSuppressed",
	"this email or phone belongs to an erased person and is suppressed; an operator can lift it with `contactd suppressions remove`")

// The kinds of values the list holds.
const (
	Email = "email"
	Phone = "phone"
)

// keyPlace binds the sealed key to its row.
const keyPlace = "suppression_key.key_sealed"

// List checks values against the suppression list and adds to it. Its key is read (or made,
// by the first process to need it) once and kept: it never changes.
type List struct {
	store *store.Store
	keys  *seal.Keyring
	now   func() time.Time
	mu    sync.Mutex
	key   []byte
}

// New returns the list of st, whose key is sealed with keys.
func New(st *store.Store, keys *seal.Keyring, now func() time.Time) *List {
	return &List{store: st, keys: keys, now: now}
}

// Entry is one value as the list keeps it.
type Entry struct {
	Kind   string
	Digest []byte
}

// Entries are the list's entries for a contact's email and phone (none for an empty phone):
// each value as typed (its dedupe form: the list's entries from before kept only that one)
// and as the person it names, when that differs: the email as its provider reads it (the
// duplicate finder's form, EmailCanon) and the phone in E.164. An erasure adds them all; a new
// value is refused when any of its entries is listed. emailKey is the email as the account
// dedupes it (contact.EmailKey).
func (l *List) Entries(ctx context.Context, account uuid.UUID, emailKey string, phone *string) ([]Entry, error) {
	key, err := l.digestKey(ctx)
	if err != nil {
		return nil, err
	}
	out := []Entry{{Email, digest(key, account, Email, emailKey)}}
	if c := EmailCanon(emailKey); c != "" && c != emailKey {
		out = append(out, Entry{Email, digest(key, account, Email, c)})
	}
	if p := PhoneKey(phone); p != "" {
		out = append(out, Entry{Phone, digest(key, account, Phone, p)})
		out = append(out, Entry{Phone, digest(key, account, Phone, PhoneE164(phone))})
	}
	return out, nil
}

// EntriesOf are the list's entries for lone values, as Entries makes them: emails (each its
// dedupe key, contact.EmailKey) and phones, none of which is a contact's pair.
func (l *List) EntriesOf(ctx context.Context, account uuid.UUID, emailKeys, phones []string) ([]Entry, error) {
	var out []Entry
	for _, e := range emailKeys {
		more, err := l.Entries(ctx, account, e, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, more...)
	}
	for _, p := range phones {
		more, err := l.Entries(ctx, account, "", &p)
		if err != nil {
			return nil, err
		}
		out = append(out, more[1:]...) // not the empty email's
	}
	return out, nil
}

// Digests are the entries' digests, as the statements take them.
func Digests(entries []Entry) [][]byte {
	out := make([][]byte, len(entries))
	for i, e := range entries {
		out[i] = e.Digest
	}
	return out
}

// Matching returns which of digests the account suppresses.
func Matching(ctx context.Context, q *db.Queries, account uuid.UUID, digests [][]byte) (map[string]bool, error) {
	found, err := q.SuppressionsMatching(ctx, db.SuppressionsMatchingParams{AccountID: account, Digests: digests})
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(found))
	for _, d := range found {
		out[string(d)] = true
	}
	return out, nil
}

// Add puts entries on the account's list, in the caller's transaction (an erasure's), and
// returns their kinds.
func Add(ctx context.Context, q *db.Queries, account, erasure uuid.UUID, entries []Entry, now time.Time) ([]string, error) {
	kinds := make([]string, len(entries))
	for i, e := range entries {
		kinds[i] = e.Kind
	}
	return kinds, q.SuppressionsAdd(ctx, db.SuppressionsAddParams{AccountID: account, Digests: Digests(entries), Kinds: kinds,
		ErasureID: &erasure, CreatedAt: now})
}

// Remove lifts the suppression of one value (an email, or a phone) in the account, in every
// form the list keeps it in; false when the account did not suppress it.
func (l *List) Remove(ctx context.Context, account uuid.UUID, kind, value string) (bool, error) {
	var entries []Entry
	var err error
	if kind == Phone {
		entries, err = l.Entries(ctx, account, "", &value)
		entries = entries[1:] // the empty email's
	} else {
		entries, err = l.Entries(ctx, account, strings.ToLower(strings.TrimSpace(value)), nil)
	}
	if err != nil {
		return false, err
	}
	var n int64
	err = l.store.Do(ctx, func(q *db.Queries) error {
		for _, e := range entries {
			removed, err := q.SuppressionRemove(ctx, db.SuppressionRemoveParams{AccountID: account, Digest: e.Digest})
			if err != nil {
				return err
			}
			n += removed
		}
		return nil
	})
	return n > 0, err
}

// PhoneKey is a phone as the list compares it: its digits, without a leading US country
// code 1 before ten more. "" for no phone.
func PhoneKey(phone *string) string {
	if phone == nil {
		return ""
	}
	d := digits(*phone)
	if len(d) == 11 && d[0] == '1' {
		d = d[1:]
	}
	return d
}

// EmailCanon is an email (its dedupe key, lower case) as its provider reads it, where
// contactd knows how: Gmail ignores dots and a +tag in the local part, and so is one address
// under every spelling of it; Outlook, iCloud, Fastmail and Proton ignore a +tag. "" where the
// provider is not one of those. It is SQL's contact_email_canon (migration 00027), the
// duplicate finder's form (TestEmailCanonAgreesWithSQL).
func EmailCanon(emailKey string) string {
	local, domain, ok := strings.Cut(emailKey, "@")
	if !ok {
		return ""
	}
	local, _, _ = strings.Cut(local, "+")
	switch domain {
	case "gmail.com", "googlemail.com":
		return strings.ReplaceAll(local, ".", "") + "@gmail.com"
	case "outlook.com", "hotmail.com", "live.com", "icloud.com", "me.com", "mac.com", "fastmail.com", "proton.me", "protonmail.com", "pm.me":
		return local + "@" + domain
	}
	return ""
}

// PhoneE164 is a phone in E.164 ("+" and its digits with the country code), the North
// American Numbering Plan's +1 where the number gives no country (ten digits), a country code
// written with leading zeros (+01) read without them. "" for no phone.
func PhoneE164(phone *string) string {
	if phone == nil {
		return ""
	}
	d := strings.TrimLeft(digits(*phone), "0")
	switch {
	case d == "":
		return ""
	case len(d) == 10:
		d = "1" + d
	}
	return "+" + d
}

// digits are the ASCII digits of s, in order.
func digits(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func digest(key []byte, account uuid.UUID, kind, value string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(account[:])
	m.Write([]byte(kind + "\x00" + value))
	return m.Sum(nil)
}

// digestKey is the key of every digest: read, or made by the first process to need it.
func (l *List) digestKey(ctx context.Context) ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.key != nil {
		return l.key, nil
	}
	var sealed string
	err := l.store.Do(ctx, func(q *db.Queries) error {
		fresh := make([]byte, 32)
		_, _ = rand.Read(fresh)
		if err := q.SuppressionKeyCreate(ctx, db.SuppressionKeyCreateParams{
			KeySealed: l.keys.Seal(fresh, keyPlace), CreatedAt: l.now()}); err != nil {
			return err
		}
		var err error
		sealed, err = q.SuppressionKeyGet(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	key, err := l.keys.Open(sealed, keyPlace)
	if err != nil {
		return nil, errors.Join(errors.New("the suppression list's key does not open"), err)
	}
	l.key = key
	return key, nil
}

// Reseal seals the key under the current operator key, for `contactd secrets rekey`; true
// when it was sealed under another.
func (l *List) Reseal(ctx context.Context) (bool, error) {
	var sealed string
	err := l.store.Do(ctx, func(q *db.Queries) (err error) {
		sealed, err = q.SuppressionKeyGet(ctx)
		return err
	})
	if errors.Is(store.Translate(err), apperr.ErrNoRows) || (err == nil && seal.KeyIDOf(sealed) == l.keys.CurrentID()) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	key, err := l.keys.Open(sealed, keyPlace)
	if err != nil {
		return false, err
	}
	return true, l.store.Do(ctx, func(q *db.Queries) error {
		_, err := q.SuppressionKeyReseal(ctx, db.SuppressionKeyResealParams{KeySealed: l.keys.Seal(key, keyPlace), Was: sealed})
		return err
	})
}
