package auth

import (
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
