package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/contactd/contactd/internal/testkit"
)

// A request whose client goes away while it waits for the database is no failure of the
// service: it is logged as abandoned (INFO), never as an ERROR (which fails the test), and
// answered 499 to nobody. The request is held by a row lock the test takes, proven in flight
// by the database's lock waiters, then its client gives up.
func TestARequestItsClientAbandonsIsNoError(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	c := createContact(t, a, key, map[string]any{"email": "held@example.com"})
	ctx := context.Background()
	lock, err := a.Store.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback(ctx)
	if _, err := lock.Exec(ctx, "SELECT 1 FROM contacts WHERE contact_id = $1::uuid FOR UPDATE", c.Contact.ContactId); err != nil {
		t.Fatal(err)
	}
	reqCtx, cancel := context.WithCancel(ctx)
	req, _ := http.NewRequestWithContext(reqCtx, "PATCH", a.URL+"/public/v1/contact/"+c.Contact.ContactId, strings.NewReader(`{"name":"Gone"}`))
	req.Header.Set("x-api-key", key)
	req.Header.Set("Content-Type", "application/json")
	done := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	testkit.Eventually(t, "the PATCH waiting for the contact's lock", func() bool { return a.LockWaiters(t) > 0 })
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the abandoned request got an answer")
	}
	testkit.Eventually(t, "the abandoned request logged", func() bool {
		return strings.Contains(a.Logs.String(), `"msg":"request abandoned by its client"`)
	})
	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
}
