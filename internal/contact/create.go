package contact

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/address"
	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/event"
	"github.com/contactd/contactd/internal/field"
	"github.com/contactd/contactd/internal/platform/store"
	"github.com/contactd/contactd/internal/platform/token"
	"github.com/contactd/contactd/internal/suppression"
)

// WarningInvalidAddress is the create warning for an address that could not be parsed.
const WarningInvalidAddress = "InvalidInputAddress"

// CreateInput is a new contact. Fields arrives verbatim for the proof-of-consent record.
type CreateInput struct {
	Email               string
	Name, Phone         *string
	Tags                []string
	Address             *string
	CRM                 *CRMFields
	AssignedUserEmailID *string
	Origin              Origin
	Fields              json.RawMessage
	// CustomFields is the request's customFields object, as sent (nil: none).
	CustomFields json.RawMessage
}

// Create stores a new contact with its defaults, its parsed address and its consent record,
// its events (TagsAdded for its tags, ContactEnriched when its email status needs no DNS) and
// their deliveries, all at once: one statement, sent with the other creates in flight
// (s.creates), one commit for all of them. An address that cannot be parsed does not stop
// the create: it is reported in the warnings.
func (s *Service) Create(ctx context.Context, accountID uuid.UUID, in CreateInput) (Contact, []string, error) {
	defs, err := s.fields.Of(ctx, nil, accountID, false)
	for err == nil {
		var c Contact
		var warnings []string
		c, warnings, err = s.create(ctx, accountID, in, defs)
		if errors.Is(err, errSegmentsChanged) {
			err = nil
			continue
		}
		if !errors.Is(err, errFieldsChanged) {
			return c, warnings, err
		}
		defs, err = s.fields.Of(ctx, nil, accountID, true)
	}
	return Contact{}, nil, err
}

// create is Create against the account's field definitions defs; errFieldsChanged when they
// were not current.
func (s *Service) create(ctx context.Context, accountID uuid.UUID, in CreateInput, defs *field.Definitions) (Contact, []string, error) {
	c, warnings, events, fields, err := s.newContact(ctx, in, s.now(), defs)
	if err != nil {
		return Contact{}, nil, err
	}
	version, segments, entered, err := s.entered(ctx, accountID, c)
	if err != nil {
		return Contact{}, nil, err
	}
	events = append(events, entered...)
	p := createParams(accountID, c, in, events)
	p.FieldsVersion, p.SegmentsVersion, p.SegmentIds = defs.Version, version, segments
	entries, err := s.suppressed.Entries(ctx, accountID, p.EmailKey, p.Phone)
	if err != nil {
		return Contact{}, nil, err
	}
	more, err := s.fieldEntries(ctx, accountID, defs, fields.Values)
	if err != nil {
		return Contact{}, nil, err
	}
	p.SuppressionDigests = suppression.Digests(append(entries, more...))
	if err := s.insert(ctx, p, events, fields); err != nil {
		return Contact{}, nil, err
	}
	return c, warnings, nil
}

// newContact is the contact in would create at now, with its defaults, its parsed address (or
// the warning that it did not parse) and its events: TagsAdded when it has tags, and
// ContactEnriched when its email's status is known without DNS (Options.Verdicts), which the
// create then applies itself, so that enrichment has nothing left to do for it: its address,
// if any, is parsed by the running parser already.
func (s *Service) newContact(ctx context.Context, in CreateInput, now time.Time, defs *field.Definitions) (Contact, []string, []event.Prepared, field.Write, error) {
	tags, err := NormalizeTags(in.Tags)
	if err != nil {
		return Contact{}, nil, nil, field.Write{}, err
	}
	fields, err := fieldsWrite(defs, nil, in.CustomFields, true)
	if err != nil {
		return Contact{}, nil, nil, field.Write{}, err
	}
	c := Contact{
		ID: uuid.Must(uuid.NewV7()), Email: in.Email, Name: in.Name, Phone: in.Phone,
		EmailStatus: EmailPending, RecordStatus: "Marketing", Tags: tags, CRM: in.CRM,
		AssignedUserEmailID: in.AssignedUserEmailID, ConsentToken: "cs_" + token.Base62(16),
		Properties: []Property{}, CreatedAt: now, UpdatedAt: now, CustomFields: fields.JSON(),
	}
	warnings := []string{}
	if in.Address != nil {
		if a, err := address.Parse(*in.Address); err == nil {
			c.Properties = append(c.Properties, Property{ID: uuid.Must(uuid.NewV7()), Address: a})
		} else {
			warnings = append(warnings, WarningInvalidAddress)
		}
	}
	var events []event.Prepared
	if len(tags) > 0 {
		p, err := event.Prepare(ctx, event.Event{Type: event.TagsAdded, ContactID: c.ID,
			Contact: c.info(), Info: event.TagsAddedInfo{TagsAdded: tags}, At: now})
		if err != nil {
			return Contact{}, nil, nil, field.Write{}, err
		}
		events = append(events, p)
	}
	if s.verdicts == nil {
		return c, warnings, events, fields, nil
	}
	if status, ok := s.verdicts.KnownStatus(in.Email); ok {
		c.EmailStatus = status
		p, err := event.Prepare(ctx, event.Event{Type: event.ContactEnriched, ContactID: c.ID, Contact: c.info(),
			Info: event.ContactEnrichedInfo{ChangedFields: []string{"emailStatus"}, EmailStatus: status,
				PreviousEmailStatus: EmailPending}, At: now})
		if err != nil {
			return Contact{}, nil, nil, field.Write{}, err
		}
		events = append(events, p)
	}
	return c, warnings, events, fields, nil
}

// insert writes the contact, its consent record, its first property, its events and their
// planned deliveries in one statement, in a group of creates. A contact it did not insert had
// an email the account has (DuplicateContact), or an erased person's email or phone
// (ContactSuppressed).
func (s *Service) insert(ctx context.Context, p db.ContactCreateParams, events []event.Prepared, fields field.Write) error {
	var inserted returned[db.ContactCreateRow]
	plan, err := s.events.WithPlan(ctx, nil, p.AccountID, event.Of(events), func(plan event.Plan) (current bool, err error) {
		p.SubscriptionsVersion, p.DeliveryEventIds, p.DeliverySubscriptionIds = plan.Version, plan.EventIDs, plan.SubscriptionIDs
		if len(fields.Claims) > 0 {
			inserted, err = s.insertClaiming(ctx, p, fields)
		} else {
			inserted, err = s.creates.Do(ctx, p)
		}
		switch {
		case err != nil:
			return false, err
		case !inserted.row.FieldsCurrent:
			return false, errFieldsChanged
		case !inserted.row.SegmentsCurrent:
			return false, s.segmentsChanged(p.AccountID)
		}
		return inserted.row.Current, nil
	})
	if err != nil {
		return err
	}
	if inserted.row.ContactID != uuid.Nil {
		s.events.Planned(p.AccountID, plan)
		return nil
	}
	var existing uuid.UUID
	err = s.store.Do(ctx, func(q *db.Queries) error {
		existing, err = q.ContactIDByEmail(ctx, db.ContactIDByEmailParams{AccountID: p.AccountID, EmailKey: p.EmailKey})
		if !errors.Is(store.Translate(err), apperr.ErrNoRows) {
			return err
		}
		suppressed, serr := suppression.Matching(ctx, q, p.AccountID, p.SuppressionDigests)
		if serr == nil && len(suppressed) > 0 {
			return suppression.ErrSuppressed
		}
		return errors.Join(err, serr)
	})
	if err != nil {
		return err
	}
	return duplicate(existing)
}

// insertClaiming is ContactCreate for a contact with values of unique fields: alone, in a
// transaction that claims them once the contact is inserted, and rolls back when another
// contact holds one (ErrFieldValueTaken). Two creates racing for a value: the second's claim
// waits for the first's transaction, and then finds the value taken.
func (s *Service) insertClaiming(ctx context.Context, p db.ContactCreateParams, fields field.Write) (returned[db.ContactCreateRow], error) {
	var inserted returned[db.ContactCreateRow]
	err := s.store.InTx(ctx, func(tx store.Tx) error {
		rows, err := createContacts(ctx, tx.Queries, []db.ContactCreateParams{p})
		if err != nil {
			return err
		}
		inserted = rows[0]
		if inserted.row.ContactID == uuid.Nil {
			return nil
		}
		return claimValues(ctx, tx.Queries, p.AccountID, p.ContactID, fields)
	})
	return inserted, err
}

// createParams is ContactCreate's statement for c: the contact, its consent record, its
// first property and its events.
func createParams(accountID uuid.UUID, c Contact, in CreateInput, events []event.Prepared) db.ContactCreateParams {
	fields := in.Fields
	if len(fields) == 0 {
		fields = json.RawMessage("{}")
	}
	p := db.ContactCreateParams{
		AccountID: accountID, ContactID: c.ID, Email: c.Email, EmailKey: EmailKey(c.Email),
		Name: c.Name, Phone: c.Phone, Tags: c.Tags, AssignedUserEmailID: c.AssignedUserEmailID,
		ConsentToken: c.ConsentToken, CreatedAt: c.CreatedAt,
		ConsentApiKeyName: in.Origin.KeyName, ConsentApiKeyPrefix: in.Origin.KeyPrefix,
		ConsentSourceIp: in.Origin.SourceIP, ConsentUserAgent: in.Origin.UserAgent, ConsentFields: fields,
		ActiveProperties: storedProperties(c.Properties), AddressesParsedBy: address.Version,
		EmailStatus: c.EmailStatus, CustomFields: c.CustomFields,
	}
	if c.EmailStatus == EmailPending {
		p.EnrichDueAt = &c.CreatedAt
	}
	for _, ev := range events {
		p.EventIds, p.EventTypes = append(p.EventIds, ev.ID), append(p.EventTypes, string(ev.Type))
		p.EventPayloads = append(p.EventPayloads, string(ev.Payload)) // text: the exact bytes survive ::json
		p.EventTraces = append(p.EventTraces, ev.Trace)
	}
	if c.CRM != nil {
		p.CrmName, p.CrmUrl, p.CrmSource, p.CrmStage, p.CrmCreatedDate = c.CRM.Name, c.CRM.URL, c.CRM.Source, c.CRM.Stage, c.CRM.CreatedDate
	}
	if len(c.Properties) > 0 {
		a := c.Properties[0].Address
		p.PropertyID, p.RawAddress, p.Normalized = &c.Properties[0].ID, *in.Address, a.Normalized()
		p.AptOrUnitNumber, p.StreetAddress, p.City, p.County, p.State, p.Zip = a.AptOrUnitNumber, a.StreetAddress, a.City, a.County, a.State, a.Zip
	}
	return p
}

// createContacts sends ContactCreate for each of ps as one batch: whether each inserted its
// contact (no row: its email was taken), or the error that failed the batch, which then
// wrote nothing. In email order: ON CONFLICT waits for an uncommitted insert of its key.
func createContacts(ctx context.Context, q *db.Queries, ps []db.ContactCreateParams) ([]returned[db.ContactCreateRow], error) {
	return returnedRows(ps, func(a, b db.ContactCreateParams) int {
		if c := compareIDs(a.AccountID, b.AccountID); c != 0 {
			return c
		}
		return strings.Compare(a.EmailKey, b.EmailKey)
	}, func(sorted []db.ContactCreateParams) rowBatch[db.ContactCreateRow] {
		return q.ContactCreate(ctx, sorted)
	})
}

func insertProperty(ctx context.Context, tx store.Tx, accountID, contactID uuid.UUID, p Property, raw string, now time.Time) error {
	a := p.Address
	_, err := tx.PropertyInsert(ctx, db.PropertyInsertParams{
		AccountID: accountID, PropertyID: p.ID, ContactID: contactID, RawAddress: raw,
		AptOrUnitNumber: a.AptOrUnitNumber, StreetAddress: a.StreetAddress, City: a.City,
		County: a.County, State: a.State, Zip: a.Zip, Normalized: a.Normalized(), CreatedAt: now,
	})
	return err
}

func (c Contact) info() event.ContactInfo {
	return contactInfo(c.ID, c.Email, c.AssignedUserEmailID)
}
