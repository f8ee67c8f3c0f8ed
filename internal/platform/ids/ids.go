// Package ids parses the API's identifiers: canonical UUID text only, so that every other
// spelling of an id (braces, urn:, no dashes) is simply not found, the same everywhere.
package ids

import "github.com/google/uuid"

// Parse returns the id in raw, or ok=false when raw is not a canonical UUID.
func Parse(raw string) (uuid.UUID, bool) {
	if len(raw) != 36 {
		return uuid.Nil, false
	}
	id, err := uuid.Parse(raw)
	return id, err == nil
}
