package delivery

import (
	"strings"
	"testing"
)

func TestExcerpt(t *testing.T) {
	if excerpt(nil) != nil {
		t.Error("an empty answer has an excerpt")
	}
	if got := *excerpt([]byte("quota exceeded")); got != "quota exceeded" {
		t.Errorf("%q", got)
	}
	// 255 ASCII bytes then a 3-byte character cut after its first byte: the cut is dropped
	cut := []byte(strings.Repeat("a", 255) + "€")[:excerptBytes]
	if got := *excerpt(cut); got != strings.Repeat("a", 255) {
		t.Errorf("cut character: %q", got[250:])
	}
	if got := *excerpt([]byte("ok\xff\x00!")); got != "ok\uFFFD!" {
		t.Errorf("invalid bytes and NUL: %q", got)
	}
}
