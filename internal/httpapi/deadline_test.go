package httpapi_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/contactd/contactd/internal/config"
	"github.com/contactd/contactd/internal/testkit"
)

// TestARequestPastItsDeadlineIsStopped: a request whose work outlives CONTACTD_REQUEST_TIMEOUT
// answers 503 naming its deadline, and its work ends there: the statement it waits in is
// cancelled in PostgreSQL (nothing waits for the held contact any more, while the test still
// holds it), its transaction rolls back, and nothing of it is written. The test's open
// transaction holds the contact, so neither request can finish before its deadline, however
// fast or slow the machine.
func TestARequestPastItsDeadlineIsStopped(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	account, key := a.Account("acme")
	id := createContact(t, a, key, map[string]any{"email": "held@example.com", "name": "Before"}).Contact.ContactId
	const deadline = 200 * time.Millisecond
	short := a.SecondProcess(func(c *config.Config) { c.RequestTimeout = deadline })
	ctx := context.Background()
	held := holdContacts(t, a, account, id)
	for _, req := range []struct {
		name, method, path string
		body               any
	}{
		{"PATCH", "PATCH", "/public/v1/contact/" + id, map[string]any{"name": "After"}},
		{"batch upsert", "POST", "/public/v1/contacts/batch", map[string]any{"mode": "upsert", "contacts": []any{
			map[string]any{"email": "new@example.com", "name": "New"},
			map[string]any{"email": "held@example.com", "name": "After", "tags": []string{"late"}}}}},
	} {
		r := short.Do(req.method, req.path, key, req.body)
		var e struct{ Code, Message string }
		r.JSON(t, &e)
		if r.Status != 503 || e.Code != "ServiceUnavailable" || !strings.Contains(e.Message, "deadline of "+deadline.String()) ||
			r.Header.Get("Retry-After") != "1" {
			t.Fatalf("%s past its deadline: %d %s (Retry-After %q), want 503 ServiceUnavailable naming the deadline", req.name, r.Status, r.Body, r.Header.Get("Retry-After"))
		}
		testkit.Eventually(t, req.name+"'s statement cancelled while the contact is still held", func() bool { return a.LockWaiters(t) == 0 })
	}
	if err := held.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	c := getContact(t, a, key, id)
	if c.Name == nil || *c.Name != "Before" || len(c.Tags) != 0 {
		t.Errorf("the held contact after the stopped requests: name %v, tags %v; want Before and none", c.Name, c.Tags)
	}
	if n := a.Count(t, "SELECT count(*) FROM contacts WHERE account_id = $1", account); n != 1 {
		t.Errorf("%d contacts after the stopped batch, want 1 (its new contact rolled back)", n)
	}
	if n := a.Count(t, "SELECT count(*) FROM webhook_events WHERE account_id = $1 AND payload::text LIKE '%After%'", account); n != 0 {
		t.Errorf("%d events of the stopped requests", n)
	}
}
