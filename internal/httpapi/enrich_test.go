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

	for _, tc := range []struct {
		email, want string
		created     api.EmailStatus
	}{
		{"jane@good.example", "Pending->Valid", api.EmailStatusPending},
		{"ops@web-only.example", "Pending->Valid", api.EmailStatusPending},
		// a disposable domain needs no DNS: the create decides it, and emits the same event
		{"temp@mailinator.com", "Pending->Invalid", api.EmailStatusInvalid},
		{"who@no-such-host.example", "Pending->Invalid", api.EmailStatusPending},
	} {
		email, want := tc.email, tc.want
		c := createContact(t, a, key, map[string]any{"email": email}).Contact
		if c.EmailStatus != tc.created {
			t.Errorf("%s created %s, want %s", email, c.EmailStatus, tc.created)
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

// TestKnownVerdictAppliedAtCreate: once a domain's verdict is remembered, a new contact on it
// is created with its status decided and its ContactEnriched event recorded by the create
// itself — alone, in a batch, with and without subscribers — and enrichment has nothing left
// to do for it (no second write of the contact, no second lookup).
func TestKnownVerdictAppliedAtCreate(t *testing.T) {
	t.Parallel()
	a, _, key := deliveringAPI(t)
	rc := listen(t, a, key, "ContactEnriched")
	a.DNS.SetMX("warm.example", "mx.warm.example")
	first := createContact(t, a, key, map[string]any{"email": "first@warm.example"}).Contact
	if first.EmailStatus != api.EmailStatusPending {
		t.Fatalf("a domain never looked up: created %s, want Pending", first.EmailStatus)
	}
	if got := emailVerdict(enriched(t, rc, first.ContactId)); got != "Pending->Valid" {
		t.Fatalf("the first contact: %s", got)
	}

	_, quietKey := a.Account("quiet") // no subscriptions: the create's statement alone
	created := []string{
		createContact(t, a, key, map[string]any{"email": "second@warm.example", "tags": []string{"vip"}}).Contact.ContactId,
		createContact(t, a, quietKey, map[string]any{"email": "third@warm.example"}).Contact.ContactId,
	}
	for _, r := range batch(t, a, key, "create", map[string]any{"email": "b1@warm.example"}, map[string]any{"email": "b2@warm.example"}) {
		created = append(created, r.ContactId.String())
	}
	for _, r := range batch(t, a, quietKey, "create", map[string]any{"email": "b3@warm.example"}) {
		created = append(created, r.ContactId.String())
	}
	for _, id := range created {
		if n := a.Count(t, `SELECT count(*) FROM contacts WHERE contact_id = $1::uuid AND email_status = 'Valid' AND enrich_due_at IS NULL`, id); n != 1 {
			t.Errorf("contact %s: not stored Valid and done with enrichment", id)
		}
		if n := a.Count(t, `SELECT count(*) FROM webhook_events WHERE contact_id = $1::uuid AND event_type = 'ContactEnriched'
			AND payload->'data'->'contactEnrichedInfo'->>'emailStatus' = 'Valid'
			AND payload->'data'->'contactEnrichedInfo'->>'previousEmailStatus' = 'Pending'`, id); n != 1 {
			t.Errorf("contact %s: %d ContactEnriched events recorded, want 1", id, n)
		}
	}
	// the subscribed account's three get theirs delivered (in any order: deliveries run side by side)
	delivered := map[string]string{}
	for range 3 {
		ev := nextEvent(t, rc)
		if ev.EventType == api.EventTypeContactEnriched {
			delivered[ev.Data.ContactInfo.ContactId] = emailVerdict(ev)
		}
	}
	for _, id := range []string{created[0], created[2], created[3]} {
		if got := delivered[id]; got != "Pending->Valid" {
			t.Errorf("contact %s: delivered %q, want Pending->Valid", id, got)
		}
	}
	if got := getContact(t, a, key, created[0]); got.EmailStatus != api.EmailStatusValid {
		t.Errorf("read back: %s, want Valid", got.EmailStatus)
	}
	if calls := a.DNS.Calls("warm.example"); calls != 1 {
		t.Errorf("%d MX lookups, want 1", calls)
	}
	a.DeliveriesSettled(t)
	rc.None(t)
}
