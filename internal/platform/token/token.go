// Package token makes unguessable tokens from crypto/rand: API keys, consent tokens, signing
// secrets.
package token

import (
	"crypto/rand"
	"encoding/base64"
	"math/big"
	"strings"
)

// Base62 returns n random bytes as base62, zero-padded to a fixed length for n.
func Base62(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	s := new(big.Int).SetBytes(b).Text(62)
	width := (n*8*1000 + 5953) / 5954 // ceil(n*8 / log2(62))
	return strings.Repeat("0", max(0, width-len(s))) + s
}

// Base64 returns n random bytes in standard base64.
func Base64(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}
