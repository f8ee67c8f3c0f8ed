package testkit

import (
	"context"
	"testing"

	"github.com/contactd/contactd/internal/platform/store"
)

// invariants are rules of the stored data that no single response shows, each a query that
// lists what breaks it (three text columns: what, and two details).
var invariants = []struct{ rule, query string }{
	// every statement that changes a contact's properties rewrites the contact's copy of its
	// active ones (contacts.active_properties) in its transaction
	{"a contact's copy of its active properties is its properties", `
SELECT contact_id::text, active_properties::text, active_properties_of(account_id, contact_id)::text
FROM contacts
WHERE active_properties <> active_properties_of(account_id, contact_id)`},
	// a unique value is claimed by a contact that holds a value of that field: a claim left
	// behind by a delete, an erasure, a merge or a change of the value would refuse the value
	// to every other contact for ever
	{"every unique value's claim belongs to a live contact holding the field", `
SELECT u.contact_id::text, u.field_key, u.value
FROM contact_unique_values u
WHERE NOT EXISTS (SELECT 1 FROM contacts c WHERE c.account_id = u.account_id AND c.contact_id = u.contact_id
                  AND c.custom_fields ? u.field_key)`},
}

// CheckInvariants fails the test when the database breaks a rule that no single response
// shows; NewAPI runs it when its test ends.
func CheckInvariants(t testing.TB, st *store.Store) {
	t.Helper()
	for _, inv := range invariants {
		rows, err := st.Pool.Query(context.Background(), inv.query)
		if err != nil {
			t.Errorf("checking that %s: %v", inv.rule, err)
			continue
		}
		for rows.Next() {
			var what, a, b string
			if err := rows.Scan(&what, &a, &b); err != nil {
				t.Error(err)
				break
			}
			t.Errorf("broken: %s: %s (%s, %s)", inv.rule, what, a, b)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			t.Error(err)
		}
	}
}
