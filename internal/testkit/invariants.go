package testkit

import (
	"context"
	"testing"

	"github.com/contactd/contactd/internal/store"
)

// staleProperties lists contacts whose copy of their active properties (contacts.
// active_properties) differs from what properties holds: every statement that changes a
// contact's properties must rewrite the copy in its transaction.
const staleProperties = `
SELECT c.contact_id::text, c.active_properties::text, a.props::text
FROM contacts c
CROSS JOIN LATERAL (
    SELECT coalesce(jsonb_agg(jsonb_build_object(
               'propertyId', p.property_id, 'aptOrUnitNumber', p.apt_or_unit_number,
               'streetAddress', p.street_address, 'city', p.city, 'county', p.county,
               'state', p.state, 'zip', p.zip) ORDER BY p.property_id), '[]'::jsonb) AS props
    FROM properties p
    WHERE p.account_id = c.account_id AND p.contact_id = c.contact_id AND p.archived_at IS NULL
) a
WHERE c.active_properties <> a.props`

// CheckInvariants fails the test when the database breaks a rule that no single response
// shows; NewAPI runs it when its test ends.
func CheckInvariants(t testing.TB, st *store.Store) {
	t.Helper()
	rows, err := st.Pool.Query(context.Background(), staleProperties)
	if err != nil {
		t.Errorf("checking the contacts' copies of their properties: %v", err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var id, stored, want string
		if err := rows.Scan(&id, &stored, &want); err != nil {
			t.Error(err)
			return
		}
		t.Errorf("contact %s keeps active_properties %s; its properties are %s", id, stored, want)
	}
	if err := rows.Err(); err != nil {
		t.Error(err)
	}
}
