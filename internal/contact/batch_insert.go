package contact

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/address"
)

// manyRow is one contact of ContactCreateMany's rows: the JSON object jsonb_to_recordset
// reads (column names as the statement declares them).
type manyRow struct {
	ContactID           uuid.UUID       `json:"contact_id"`
	Email               string          `json:"email"`
	EmailKey            string          `json:"email_key"`
	Name                *string         `json:"name,omitempty"`
	Phone               *string         `json:"phone,omitempty"`
	Tags                []string        `json:"tags"`
	AssignedUserEmailID *string         `json:"assigned_user_email_id,omitempty"`
	CrmName             *string         `json:"crm_name,omitempty"`
	CrmURL              *string         `json:"crm_url,omitempty"`
	CrmSource           *string         `json:"crm_source,omitempty"`
	CrmStage            *string         `json:"crm_stage,omitempty"`
	CrmCreatedDate      *time.Time      `json:"crm_created_date,omitempty"`
	ConsentToken        string          `json:"consent_token"`
	ConsentFields       json.RawMessage `json:"consent_fields"`
	ActiveProperties    json.RawMessage `json:"active_properties"`
	PropertyID          *uuid.UUID      `json:"property_id,omitempty"`
	RawAddress          string          `json:"raw_address"`
	AptOrUnitNumber     string          `json:"apt_or_unit_number"`
	StreetAddress       string          `json:"street_address"`
	City                string          `json:"city"`
	County              string          `json:"county"`
	State               string          `json:"state"`
	Zip                 string          `json:"zip"`
	Normalized          string          `json:"normalized"`
	EventID             *uuid.UUID      `json:"event_id,omitempty"`
	EventPayload        *string         `json:"event_payload,omitempty"`
}

// createMany inserts the contacts of ps (one account, one origin, one time: a batch) in one
// statement and reports which it inserted: the others' emails were taken.
func createMany(ctx context.Context, q *db.Queries, ps []db.ContactCreateParams) (map[uuid.UUID]bool, error) {
	if len(ps) == 0 {
		return map[uuid.UUID]bool{}, nil
	}
	rows := make([]manyRow, len(ps))
	for i, p := range ps {
		r := manyRow{ContactID: p.ContactID, Email: p.Email, EmailKey: p.EmailKey, Name: p.Name, Phone: p.Phone,
			Tags: p.Tags, AssignedUserEmailID: p.AssignedUserEmailID, CrmName: p.CrmName, CrmURL: p.CrmUrl,
			CrmSource: p.CrmSource, CrmStage: p.CrmStage, CrmCreatedDate: p.CrmCreatedDate,
			ConsentToken: p.ConsentToken, ConsentFields: p.ConsentFields, ActiveProperties: p.ActiveProperties}
		if r.Tags == nil {
			r.Tags = []string{}
		}
		if p.PropertyID != nil {
			r.PropertyID, r.RawAddress, r.AptOrUnitNumber, r.StreetAddress = p.PropertyID, p.RawAddress, p.AptOrUnitNumber, p.StreetAddress
			r.City, r.County, r.State, r.Zip, r.Normalized = p.City, p.County, p.State, p.Zip, p.Normalized
		}
		if p.EventID != nil {
			payload := string(p.EventPayload) // a JSON string: the exact text survives jsonb
			r.EventID, r.EventPayload = p.EventID, &payload
		}
		rows[i] = r
	}
	raw, err := json.Marshal(rows)
	if err != nil {
		return nil, err
	}
	first := ps[0]
	ids, err := q.ContactCreateMany(ctx, db.ContactCreateManyParams{Rows: raw, AccountID: first.AccountID,
		ConsentApiKeyName: first.ConsentApiKeyName, ConsentApiKeyPrefix: first.ConsentApiKeyPrefix,
		ConsentSourceIp: first.ConsentSourceIp, ConsentUserAgent: first.ConsentUserAgent,
		CreatedAt: first.CreatedAt, AddressesParsedBy: address.Version})
	if err != nil {
		return nil, err
	}
	inserted := make(map[uuid.UUID]bool, len(ids))
	for _, id := range ids {
		inserted[id] = true
	}
	return inserted, nil
}
