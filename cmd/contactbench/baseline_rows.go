package main

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/address"
	"github.com/contactd/contactd/internal/contact"
	"github.com/contactd/contactd/internal/event"
)

// The rows baseline: contactd's own create statement (ContactCreate, the rows a create writes:
// the contact and its consent record, its property, its events and their deliveries) sent by
// the bare server, one statement per request, without contactd's HTTP stack, validation,
// auth, limits or group commit. A create's request costs contactd what it costs on top of
// this; this costs what it costs on top of the baseline's one-row INSERT: the price of the
// rows themselves. With ?events=feed it queues no deliveries (no subscriber: the events are
// recorded for the feed alone), with ?events=off it writes no events either: the prices of
// the deliveries and of recording every change for the feed.

// rowsCreate is POST /contact-rows: the body of contactd's create (email, name, tags,
// address), for account.
func rowsCreate(pool *pgxpool.Pool, account uuid.UUID) http.HandlerFunc {
	q := db.New(pool)
	audiences := event.NewSubscribers(nil, time.Now) // never listening: every read is a Reload on q
	var mu sync.Mutex
	var aud *event.Audience
	var fieldsVersion atomic.Int64 // the account's custom field definitions' version, as last read
	audience := func(ctx context.Context, stale bool) (*event.Audience, error) {
		mu.Lock()
		defer mu.Unlock()
		if aud == nil || stale {
			a, err := audiences.Reload(ctx, q, account)
			if err != nil {
				return nil, err
			}
			aud = a
		}
		return aud, nil
	}
	return func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Email   string   `json:"email"`
			Name    *string  `json:"name"`
			Tags    []string `json:"tags"`
			Address string   `json:"address"`
		}
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&in); err != nil || in.Email == "" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		mode := r.URL.Query().Get("events")
		p, events, err := rowsParams(r.Context(), account, in.Email, in.Name, in.Tags, in.Address, mode)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var id uuid.UUID
		for current, tries := false, 0; err == nil && !current; tries++ {
			p.FieldsVersion = fieldsVersion.Load() // the bench's creates carry no values: only its version matters
			var a *event.Audience
			if a, err = audience(r.Context(), tries > 0); err != nil {
				break
			}
			plan := a.Plan(nil, uuid.Nil)
			if mode != "feed" {
				plan = a.Plan(events, uuid.Nil)
			}
			p.SubscriptionsVersion, p.DeliveryEventIds, p.DeliverySubscriptionIds = plan.Version, plan.EventIDs, plan.SubscriptionIDs
			var fieldsCurrent bool
			q.ContactCreate(r.Context(), []db.ContactCreateParams{p}).QueryRow(func(_ int, row db.ContactCreateRow, qerr error) {
				id, current, fieldsCurrent, err = row.ContactID, row.Current, row.FieldsCurrent, qerr
			})
			if err == nil && !fieldsCurrent {
				var defs db.FieldDefinitionsRow
				if defs, err = q.FieldDefinitions(r.Context(), account); err == nil {
					fieldsVersion.Store(defs.Version)
				}
			}
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		writeJSON(w, map[string]string{"contactId": id.String()})
	}
}

// rowsParams are the statement's values as contactd's create makes them for this body, its
// email's status known (as the bench's creates find it: enrichment remembers the domain), so
// with a TagsAdded and a ContactEnriched event.
// events is "off" (none), "feed" (no deliveries) or anything else (both).
func rowsParams(ctx context.Context, account uuid.UUID, email string, name *string, tags []string, raw string,
	events string) (db.ContactCreateParams, []event.Prepared, error) {
	now := time.Now().UTC().Truncate(time.Microsecond)
	id := uuid.Must(uuid.NewV7())
	p := db.ContactCreateParams{AccountID: account, ContactID: id, Email: email, EmailKey: contact.EmailKey(email),
		Name: name, Tags: tags, ConsentToken: "cs_" + uuid.NewString(), CreatedAt: now,
		ConsentApiKeyName: "bench", ConsentApiKeyPrefix: "ck_bench", ConsentSourceIp: "127.0.0.1",
		ConsentUserAgent: "contactbench", ConsentFields: []byte("{}"), ActiveProperties: []byte("[]"), CustomFields: []byte("{}"),
		AddressesParsedBy: address.Version, EmailStatus: "Valid"}
	info := event.ContactInfo{ContactID: id.String(), EmailID: email}
	if raw != "" {
		a, err := address.Parse(raw)
		if err != nil {
			return p, nil, err
		}
		pid := uuid.Must(uuid.NewV7())
		props, err := json.Marshal([]map[string]string{{"propertyId": pid.String(), "aptOrUnitNumber": a.AptOrUnitNumber,
			"streetAddress": a.StreetAddress, "city": a.City, "county": a.County, "state": a.State, "zip": a.Zip}})
		if err != nil {
			return p, nil, err
		}
		p.ActiveProperties, p.PropertyID, p.RawAddress, p.Normalized = props, &pid, raw, a.Normalized()
		p.AptOrUnitNumber, p.StreetAddress, p.City, p.County, p.State, p.Zip = a.AptOrUnitNumber, a.StreetAddress, a.City, a.County, a.State, a.Zip
		info.PropertyID = pid.String()
	}
	if events == "off" {
		return p, nil, nil
	}
	var prepared []event.Prepared
	for _, ev := range []event.Event{
		{Type: event.TagsAdded, ContactID: id, Contact: info, Info: event.TagsAddedInfo{TagsAdded: tags}, At: now},
		{Type: event.ContactEnriched, ContactID: id, Contact: info, At: now,
			Info: event.ContactEnrichedInfo{ChangedFields: []string{"emailStatus"}, EmailStatus: "Valid", PreviousEmailStatus: "Pending"}},
	} {
		prep, err := event.Prepare(ctx, ev)
		if err != nil {
			return p, nil, err
		}
		p.EventIds, p.EventTypes = append(p.EventIds, prep.ID), append(p.EventTypes, string(prep.Type))
		p.EventPayloads, p.EventTraces = append(p.EventPayloads, string(prep.Payload)), append(p.EventTraces, "")
		prepared = append(prepared, prep)
	}
	return p, prepared, nil
}
