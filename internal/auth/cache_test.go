package auth

import (
	"strings"
	"testing"

	"github.com/google/uuid"
)

// A revocation names the key it forgets, and only that key; a payload that names no key
// (unreadable, or the nil id) forgets them all.
func TestRevokedSelectsTheNamedKey(t *testing.T) {
	a, b := uuid.New(), uuid.New()
	match := revoked(a.String())
	if match == nil || !match([32]byte{}, Principal{KeyID: a}) || match([32]byte{1}, Principal{KeyID: b}) {
		t.Errorf("revoking %s: selects it %v, selects another %v", a, match != nil && match([32]byte{}, Principal{KeyID: a}),
			match != nil && match([32]byte{1}, Principal{KeyID: b}))
	}
	for _, payload := range []string{"", "not a key id", uuid.Nil.String()} {
		if revoked(payload) != nil {
			t.Errorf("%q selects some keys, want all", payload)
		}
	}
}

// Only a key of the form the service issues is looked up: ck_ or ck_test_, then exactly the
// body's length of base62.
func TestWellFormed(t *testing.T) {
	body := strings.Repeat("aZ9", keyBodyLen/3) + strings.Repeat("x", keyBodyLen%3)
	for key, want := range map[string]bool{
		keyPrefix + body: true, testPrefix + body: true,
		keyPrefix + body[1:]: false, keyPrefix + body + "x": false, testPrefix + body[1:]: false,
		"xx_" + body: false, body: false, keyPrefix + body[1:] + "-": false, keyPrefix + body[1:] + "é": false,
	} {
		if wellFormed(key) != want {
			t.Errorf("%q: well formed %v, want %v", key, !want, want)
		}
	}
}
