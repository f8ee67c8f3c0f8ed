package httpapi_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/address"
	"github.com/contactd/contactd/internal/testkit"
)

// enriched waits for the next ContactEnriched event about contact id.
func enriched(t *testing.T, rc *testkit.Receiver, id string) api.WebhookEvent {
	t.Helper()
	ev := nextEvent(t, rc)
	if ev.EventType != api.EventTypeContactEnriched || ev.Data.ContactEnrichedInfo == nil || ev.Data.ContactInfo.ContactId != id {
		t.Fatalf("event = %+v, want ContactEnriched of %s", ev, id)
	}
	return ev
}

func emailVerdict(ev api.WebhookEvent) string {
	info := ev.Data.ContactEnrichedInfo
	if info.EmailStatus == nil || info.PreviousEmailStatus == nil {
		return "none"
	}
	return string(*info.PreviousEmailStatus) + "->" + string(*info.EmailStatus)
}

func TestEnrichmentEmailStatus(t *testing.T) {
	t.Parallel()
	a, _, key := deliveringAPI(t)
	rc := listen(t, a, key, "ContactEnriched")
	a.DNS.SetMX("good.example", "mx.good.example")
	a.DNS.SetHost("web-only.example", "192.0.2.10")

	for email, want := range map[string]string{
		"jane@good.example":        "Pending->Valid",
		"ops@web-only.example":     "Pending->Valid",
		"temp@mailinator.com":      "Pending->Invalid",
		"who@no-such-host.example": "Pending->Invalid",
	} {
		c := createContact(t, a, key, map[string]any{"email": email}).Contact
		if c.EmailStatus != api.EmailStatusPending {
			t.Errorf("%s created %s, want Pending", email, c.EmailStatus)
		}
		ev := enriched(t, rc, c.ContactId)
		if got := emailVerdict(ev); got != want {
			t.Errorf("%s: %s, want %s", email, got, want)
		}
		if info := ev.Data.ContactEnrichedInfo; len(info.ChangedFields) != 1 || info.ChangedFields[0] != "emailStatus" || info.Address != nil {
			t.Errorf("%s: info = %+v", email, info)
		}
		if got := getContact(t, a, key, c.ContactId); "Pending->"+string(got.EmailStatus) != want {
			t.Errorf("%s stored as %s", email, got.EmailStatus)
		}
	}

	// an email change makes the status Pending again and enrichment decides the new one.
	c := createContact(t, a, key, map[string]any{"email": "move@good.example"}).Contact
	enriched(t, rc, c.ContactId)
	patched, r := patch(t, a, key, c.ContactId, `{"email": "move@mailinator.com"}`)
	if r.Status != 200 || patched.EmailStatus != api.EmailStatusPending {
		t.Fatalf("PATCH email: %d %s", r.Status, r.Body)
	}
	if got := emailVerdict(enriched(t, rc, c.ContactId)); got != "Pending->Invalid" {
		t.Errorf("after the email change: %s", got)
	}
	// a name change alone does not re-enrich.
	patch(t, a, key, c.ContactId, `{"name": "Mo"}`)
	if n := a.Count(t, `SELECT count(*) FROM contacts WHERE contact_id = $1::uuid AND enrich_due_at IS NOT NULL`, c.ContactId); n != 0 {
		t.Errorf("due for enrichment again after a name change")
	}
	a.DeliveriesSettled(t)
	rc.None(t)
}

func TestEnrichmentRetriesTemporaryDNSFailure(t *testing.T) {
	t.Parallel()
	a, _, key := deliveringAPI(t)
	rc := listen(t, a, key, "ContactEnriched")
	a.DNS.SetMX("flaky.example", "mx.flaky.example")
	a.DNS.FailTimes("flaky.example", 1)

	c := createContact(t, a, key, map[string]any{"email": "x@flaky.example"}).Contact
	testkit.Eventually(t, "the first DNS lookup", func() bool { return a.DNS.Calls("flaky.example") > 0 })
	if got := getContact(t, a, key, c.ContactId); got.EmailStatus != api.EmailStatusPending {
		t.Errorf("after a DNS timeout the status is %s, want Pending", got.EmailStatus)
	}
	if got := emailVerdict(enriched(t, rc, c.ContactId)); got != "Pending->Valid" {
		t.Errorf("after the retry: %s", got)
	}
	if n := a.DNS.Calls("flaky.example"); n != 2 {
		t.Errorf("%d MX lookups, want the failed one and its retry", n)
	}
}

func TestEnrichmentStandardisesAddress(t *testing.T) {
	t.Parallel()
	a, accountID, key := deliveringAPI(t)
	rc := listen(t, a, key, "ContactEnriched")
	a.DNS.SetMX("good.example", "mx.good.example")
	c := createContact(t, a, key, map[string]any{"email": "home@good.example", "address": "742 evergreen terrace, springfield, or 97477"}).Contact
	if ev := enriched(t, rc, c.ContactId); ev.Data.ContactEnrichedInfo.Address != nil {
		t.Errorf("a fresh address needs no standardising: %+v", ev.Data.ContactEnrichedInfo)
	}
	// a property stored by an older parser, without county and in another spelling.
	pid := c.Properties[0].PropertyId
	if _, err := a.Store.Pool.Exec(context.Background(),
		`UPDATE properties SET county = '', street_address = '742 EVERGREEN TERRACE' WHERE property_id = $1`, pid); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Store.Pool.Exec(context.Background(), `UPDATE contacts SET
		active_properties = jsonb_set(jsonb_set(active_properties, '{0,county}', '""'), '{0,streetAddress}', '"742 EVERGREEN TERRACE"')
		WHERE account_id = $1`, accountID); err != nil {
		t.Fatal(err)
	}
	old := api.Address{StreetAddress: "742 EVERGREEN TERRACE", City: "Springfield", State: "OR", Zip: "97477"}
	// enriching again (a new email, say) does not re-parse what the running parser parsed.
	enrichAgain(t, a, accountID, address.Version)
	if got := getContact(t, a, key, c.ContactId); got.Properties[0].Address != old {
		t.Errorf("re-parsed an address of the running parser's version: %+v", got.Properties[0].Address)
	}
	// the contact records an older parser: enrichment re-parses its addresses, once.
	enrichAgain(t, a, accountID, address.Version-1)
	ev := enriched(t, rc, c.ContactId)
	info := ev.Data.ContactEnrichedInfo
	want := api.Address{StreetAddress: "742 Evergreen Ter", City: "Springfield", County: "Lane County", State: "OR", Zip: "97477"}
	if len(info.ChangedFields) != 1 || info.ChangedFields[0] != "address" || info.Address == nil || *info.Address != want ||
		ev.Data.ContactInfo.PropertyId != pid {
		t.Errorf("event = %+v", ev.Data)
	}
	if got := getContact(t, a, key, c.ContactId); got.Properties[0].Address != want {
		t.Errorf("stored address = %+v", got.Properties[0].Address)
	}
	var parsedBy int
	if err := a.Store.Pool.QueryRow(context.Background(), `SELECT addresses_parsed_by FROM contacts WHERE account_id = $1`,
		accountID).Scan(&parsedBy); err != nil || parsedBy != address.Version {
		t.Errorf("addresses parsed by version %d (%v), want %d", parsedBy, err, address.Version)
	}
}

// enrichAgain makes the account's contacts due, as parsed by parser version parsedBy, and
// waits until enrichment has finished them.
func enrichAgain(t *testing.T, a *testkit.API, accountID uuid.UUID, parsedBy int) {
	t.Helper()
	ctx := context.Background()
	if _, err := a.Store.Pool.Exec(ctx, `UPDATE contacts SET enrich_due_at = now(), addresses_parsed_by = $2
		WHERE account_id = $1`, accountID, parsedBy); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the contacts enriched again", func() bool {
		return a.Count(t, `SELECT count(*) FROM contacts WHERE account_id = $1 AND enrich_due_at IS NOT NULL`, accountID) == 0
	})
}
