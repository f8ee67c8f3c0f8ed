package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/testkit"
)

// TestTheHandlerGetsWhatWasValidated: a body is decoded once, and the handler's request is
// built from the values the validator checked. A member named twice is the last one, as the
// validator saw it: a first crmFields with a name over the spec's 64 characters never reaches
// the contact (json.Unmarshal into the typed request, as before, merged the two objects and
// stored it). The same for a batch's item.
func TestTheHandlerGetsWhatWasValidated(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	accountID, key := a.Account("acme")
	long := strings.Repeat("x", 300)

	r := a.Do("POST", "/public/v1/contact", key,
		`{"email":"twice@example.com","tags":["first"],"crmFields":{"name":"`+long+`"},"crmFields":{"stage":"New"},"tags":["last"]}`)
	if r.Status != http.StatusOK {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	var created api.CreateContactResult
	r.JSON(t, &created)
	if c := created.Contact; c.CrmFields == nil || c.CrmFields.Name != nil || c.CrmFields.Stage == nil || *c.CrmFields.Stage != "New" ||
		len(c.Tags) != 1 || c.Tags[0] != "last" {
		t.Errorf("created %+v with crmFields %+v: want only the last crmFields and tags", c, c.CrmFields)
	}

	r = a.Do("POST", "/public/v1/contacts/batch", key,
		`{"contacts":[{"email":"batch-twice@example.com","crmFields":{"name":"`+long+`"},"crmFields":{"stage":"Won"}}]}`)
	if r.Status != http.StatusOK {
		t.Fatalf("batch: %d %s", r.Status, r.Body)
	}
	var batch api.BatchContactsResult
	r.JSON(t, &batch)
	if len(batch.Results) != 1 || batch.Results[0].Status != api.BatchContactItemResultStatusCreated {
		t.Fatalf("batch results %+v", batch.Results)
	}

	var stored int
	if err := a.Store.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM contacts WHERE account_id = $1 AND (crm_name IS NOT NULL OR crm_stage IS NULL)`, accountID).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != 0 {
		t.Errorf("%d contacts stored with a crmFields member the validator never checked", stored)
	}
}
