package contact

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/apperr"
)

// ErrConsentNotFound is the answer for a token that names no contact.
var ErrConsentNotFound = apperr.New(apperr.KindNotFound, "NotFound", "no such consent record")

// consentTokenRe is the shape of the tokens Create makes ("cs_" + base62 of 16 bytes).
var consentTokenRe = regexp.MustCompile(`^cs_[0-9A-Za-z]{1,40}$`)

// Consent is how and when a contact entered the system.
type Consent struct {
	ContactID           uuid.UUID
	CreatedAt           time.Time
	KeyName, KeyPrefix  string
	SourceIP, UserAgent string
	Request             json.RawMessage
}

// ConsentByToken finds the consent record behind a proof-of-consent URL.
func (s *Service) ConsentByToken(ctx context.Context, token string) (Consent, error) {
	if !consentTokenRe.MatchString(token) {
		return Consent{}, ErrConsentNotFound
	}
	var r db.ConsentGetByTokenRow
	err := s.store.Do(ctx, func(q *db.Queries) (err error) {
		r, err = q.ConsentGetByToken(ctx, token)
		return err
	})
	if errors.Is(err, apperr.ErrNoRows) {
		return Consent{}, ErrConsentNotFound
	} else if err != nil {
		return Consent{}, err
	}
	return Consent{ContactID: r.ContactID, CreatedAt: r.CreatedAt, KeyName: r.ConsentApiKeyName, KeyPrefix: r.ConsentApiKeyPrefix,
		SourceIP: r.ConsentSourceIp, UserAgent: r.ConsentUserAgent, Request: r.ConsentFields}, nil
}
