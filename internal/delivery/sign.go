package delivery

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
)

// LegacySignatureHeader carries the original service's signature, which its receivers verify.
const LegacySignatureHeader = "fello-webhook-signature"

// SignLegacy is the original service's signature of a delivery: the base64 HMAC-SHA256 of the
// body alone, keyed with the account's client secret (decoded). It has no timestamp, so it
// cannot stop a replay; the Standard Webhooks signature can.
func SignLegacy(clientKey, body []byte) string {
	mac := hmac.New(sha256.New, clientKey)
	mac.Write(body)
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// Sign is the Standard Webhooks signature of a message: v1, then the base64 HMAC-SHA256 of
// "id.timestamp.body" keyed with the secret's base64-decoded part after "whsec_".
func Sign(secret, id string, timestamp int64, body []byte) (string, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || len(key) == 0 {
		return "", errors.New("malformed signing secret")
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write(strconv.AppendInt(nil, timestamp, 10))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)), nil
}
