package token

import (
	"strings"
	"testing"
)

func TestBase62HasFixedLengthAndAlphabet(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 2000 {
		s := Base62(32)
		if len(s) != 43 {
			t.Fatalf("len(%q) = %d, want 43", s, len(s))
		}
		if strings.Trim(s, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
			t.Fatalf("%q has characters outside base62", s)
		}
		if seen[s] {
			t.Fatalf("%q repeated", s)
		}
		seen[s] = true
	}
	if n := len(Base62(16)); n != 22 {
		t.Errorf("len(Base62(16)) = %d, want 22", n)
	}
}
