// Package seal encrypts the secrets contactd must be able to read back (webhook signing
// secrets, account client secrets), so that a dump of the database shows none of them in
// clear. AES-256-GCM from the standard library, keyed by the operator's key.
//
// A sealed secret is text: "v1.<key id>.<base64url(nonce || ciphertext)>". The key id names
// the key that sealed it (a fingerprint of the key, not the key), so a keyring holding the
// current key and older ones opens everything sealed under any of them, and `contactd secrets
// rekey` can find what is still under an older key. Each secret is sealed for its place (the
// table, column and row it lives in, as GCM's additional data): a sealed value copied onto
// another row does not open there.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// KeySize is the length of a key: AES-256.
const KeySize = 32

const version = "v1"

// ErrUnknownKey means a secret was sealed under a key the keyring does not hold.
var ErrUnknownKey = errors.New("sealed under a key this keyring does not hold")

// ErrCorrupt means a sealed value is malformed, or does not open with its key for its place.
var ErrCorrupt = errors.New("sealed secret is malformed or does not belong here")

// Keyring seals with its current key and opens with any of its keys.
type Keyring struct {
	current string
	keys    map[string]cipher.AEAD
}

// ParseKey decodes a key given in standard base64 (as CONTACTD_SECRET_KEY holds it).
func ParseKey(b64 string) ([]byte, error) {
	k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b64))
	if err != nil {
		return nil, errors.New("not standard base64")
	}
	if len(k) != KeySize {
		return nil, fmt.Errorf("%d bytes; a key is %d random bytes, e.g. `head -c 32 /dev/urandom | base64`", len(k), KeySize)
	}
	return k, nil
}

// ParseKeys decodes several keys (as CONTACTD_SECRET_KEYS_OLD lists them).
func ParseKeys(b64s []string) ([][]byte, error) {
	out := make([][]byte, len(b64s))
	for i, s := range b64s {
		k, err := ParseKey(s)
		if err != nil {
			return nil, fmt.Errorf("key %d: %w", i+1, err)
		}
		out[i] = k
	}
	return out, nil
}

// NewKey returns a new random key in standard base64.
func NewKey() string {
	k := make([]byte, KeySize)
	_, _ = rand.Read(k)
	return base64.StdEncoding.EncodeToString(k)
}

// KeyID is the fingerprint that sealed values record for key.
func KeyID(key []byte) string {
	sum := sha256.Sum256(append([]byte("contactd seal key id\x00"), key...))
	return hex.EncodeToString(sum[:8])
}

// NewKeyring returns a keyring that seals with current and opens with current and older.
func NewKeyring(current []byte, older ...[]byte) (*Keyring, error) {
	k := &Keyring{keys: map[string]cipher.AEAD{}}
	for i, key := range append([][]byte{current}, older...) {
		if len(key) != KeySize {
			return nil, fmt.Errorf("seal: a key is %d bytes, not %d", KeySize, len(key))
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		id := KeyID(key)
		if i == 0 {
			k.current = id
		}
		k.keys[id] = aead
	}
	return k, nil
}

// CurrentID is the id of the key new secrets are sealed with.
func (k *Keyring) CurrentID() string { return k.current }

// Holds reports whether the keyring has the key of id.
func (k *Keyring) Holds(id string) bool { _, ok := k.keys[id]; return ok }

// Seal encrypts secret for place (the table, column and row it will live in).
func (k *Keyring) Seal(secret []byte, place string) string {
	aead := k.keys[k.current]
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(secret)+aead.Overhead())
	_, _ = rand.Read(nonce)
	sealed := aead.Seal(nonce, nonce, secret, []byte(place))
	return version + "." + k.current + "." + base64.RawURLEncoding.EncodeToString(sealed)
}

// Open decrypts a value Seal returned for the same place.
func (k *Keyring) Open(sealed, place string) ([]byte, error) {
	id, body, ok := split(sealed)
	if !ok {
		return nil, ErrCorrupt
	}
	aead, held := k.keys[id]
	if !held {
		return nil, fmt.Errorf("%w (key id %s)", ErrUnknownKey, id)
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(body)
	if err != nil || len(raw) < aead.NonceSize()+aead.Overhead() {
		return nil, ErrCorrupt
	}
	out, err := aead.Open(nil, raw[:aead.NonceSize()], raw[aead.NonceSize():], []byte(place))
	if err != nil {
		return nil, ErrCorrupt
	}
	return out, nil
}

// KeyIDOf is the id of the key a sealed value was sealed with ("" if it is not sealed).
func KeyIDOf(sealed string) string {
	id, _, _ := split(sealed)
	return id
}

func split(sealed string) (id, body string, ok bool) {
	v, rest, ok1 := strings.Cut(sealed, ".")
	id, body, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || v != version || id == "" {
		return "", "", false
	}
	return id, body, true
}
