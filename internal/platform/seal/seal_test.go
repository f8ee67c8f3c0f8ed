package seal

import (
	"errors"
	"strings"
	"testing"
)

func keyring(t *testing.T, current string, older ...string) *Keyring {
	t.Helper()
	c, err := ParseKey(current)
	if err != nil {
		t.Fatal(err)
	}
	var o [][]byte
	for _, k := range older {
		b, err := ParseKey(k)
		if err != nil {
			t.Fatal(err)
		}
		o = append(o, b)
	}
	k, err := NewKeyring(c, o...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestSealOpens(t *testing.T) {
	k := keyring(t, NewKey())
	secret := []byte("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw1fu3bNzU")
	a, b := k.Seal(secret, "row/1"), k.Seal(secret, "row/1")
	if a == b {
		t.Error("sealing twice gave the same value: the nonce is not random")
	}
	if strings.Contains(a, "MfKQ9r8") || !strings.HasPrefix(a, "v1."+k.CurrentID()+".") || KeyIDOf(a) != k.CurrentID() {
		t.Errorf("sealed %q", a)
	}
	for _, v := range []string{a, b} {
		if got, err := k.Open(v, "row/1"); err != nil || string(got) != string(secret) {
			t.Errorf("Open = %q, %v", got, err)
		}
	}
}

// A sealed value opens only for the place it was sealed for, only with its key, and not
// after any change.
func TestSealRefuses(t *testing.T) {
	k := keyring(t, NewKey())
	v := k.Seal([]byte("secret"), "webhook_subscriptions/a/1")
	if _, err := k.Open(v, "webhook_subscriptions/a/2"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("moved to another row: %v, want ErrCorrupt", err)
	}
	other := keyring(t, NewKey())
	if _, err := other.Open(v, "webhook_subscriptions/a/1"); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("another keyring: %v, want ErrUnknownKey", err)
	}
	mid := len(v) - 10 // a character of the ciphertext whose every bit counts
	flipped := v[:mid] + string(map[bool]byte{true: 'A', false: 'B'}[v[mid] != 'A']) + v[mid+1:]
	for _, bad := range []string{flipped, "", "v1", "v2." + k.CurrentID() + ".AAAA", "v1." + k.CurrentID() + ".!!", "v1." + k.CurrentID() + ".AAAA", "whsec_x"} {
		if _, err := k.Open(bad, "webhook_subscriptions/a/1"); err == nil {
			t.Errorf("Open(%q) succeeded", bad)
		}
	}
}

// A keyring seals with its current key and opens what older keys sealed: the state during a
// move to a new key.
func TestKeyringOpensOlderKeys(t *testing.T) {
	oldKey, newKey := NewKey(), NewKey()
	before := keyring(t, oldKey)
	v := before.Seal([]byte("s"), "p")
	during := keyring(t, newKey, oldKey)
	if got, err := during.Open(v, "p"); err != nil || string(got) != "s" {
		t.Errorf("the older key's value: %q, %v", got, err)
	}
	if w := during.Seal([]byte("s"), "p"); KeyIDOf(w) == KeyIDOf(v) || !during.Holds(KeyIDOf(v)) || during.CurrentID() != KeyIDOf(w) {
		t.Errorf("sealed under %s, want the new key", KeyIDOf(w))
	}
	if _, err := keyring(t, newKey).Open(v, "p"); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("without the older key: %v", err)
	}
}

func TestParseKey(t *testing.T) {
	for _, bad := range []string{"", "not base64!", "c2hvcnQ=", NewKey() + NewKey()} {
		if _, err := ParseKey(bad); err == nil {
			t.Errorf("ParseKey(%q) accepted", bad)
		}
	}
	if _, err := ParseKey(" " + NewKey() + "\n"); err != nil {
		t.Errorf("a key with surrounding space: %v", err)
	}
}
