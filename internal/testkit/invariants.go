package testkit

import (
	"context"
	"testing"

	"github.com/contactd/contactd/internal/platform/store"
)

// staleProperties lists contacts whose copy of their active properties (contacts.
// active_properties) differs from what properties holds: every statement that changes a
// contact's properties must rewrite the copy in its transaction.
const staleProperties = `
SELECT contact_id::text, active_properties::text, active_properties_of(account_id, contact_id)::text
FROM contacts
WHERE active_properties <> active_properties_of(account_id, contact_id)`

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
