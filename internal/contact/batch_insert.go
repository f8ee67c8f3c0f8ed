package contact

import (
	"context"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/address"
	"github.com/contactd/contactd/internal/event"
)

// createMany inserts the contacts of ps (one account, one origin, one time: a batch) with
// their events and plan's deliveries of them, in one statement, and reports which it inserted
// (the others' emails were taken), or, when the plan was stale, that it inserted nothing.
func createMany(ctx context.Context, q *db.Queries, ps []db.ContactCreateParams, plan event.Plan, fieldsVersion int64) (inserted map[uuid.UUID]bool, current, fieldsCurrent bool, err error) {
	if len(ps) == 0 {
		return map[uuid.UUID]bool{}, true, true, nil
	}
	m := manyParams(ps)
	m.SubscriptionsVersion, m.DeliveryEventIds, m.DeliverySubscriptionIds = plan.Version, plan.EventIDs, plan.SubscriptionIDs
	m.FieldsVersion = fieldsVersion
	rows, err := q.ContactCreateMany(ctx, m)
	if err != nil {
		return nil, false, false, err
	}
	inserted = make(map[uuid.UUID]bool, len(rows))
	current = len(rows) > 0 && rows[0].Current
	fieldsCurrent = len(rows) > 0 && rows[0].FieldsCurrent
	for _, row := range rows {
		if row.Inserted {
			inserted[row.ContactID] = true
		}
	}
	return inserted, current, fieldsCurrent, nil
}

// manyParams lays ps out as ContactCreateMany's columns: an element per contact, and per
// property and event for the contacts that have one. Every array is made, even empty: a nil
// slice would be sent as NULL, which unnest reads as no rows at all.
func manyParams(ps []db.ContactCreateParams) db.ContactCreateManyParams {
	n, first := len(ps), ps[0]
	m := db.ContactCreateManyParams{
		AccountID: first.AccountID, ConsentApiKeyName: first.ConsentApiKeyName, ConsentApiKeyPrefix: first.ConsentApiKeyPrefix,
		ConsentSourceIp: first.ConsentSourceIp, ConsentUserAgent: first.ConsentUserAgent, CreatedAt: first.CreatedAt,
		AddressesParsedBy: address.Version,
		ContactIds:        make([]uuid.UUID, n), DigestFrom: make([]int32, n), DigestCount: make([]int32, n), SuppressionDigests: [][]byte{},
		Emails: make([]string, n), EmailKeys: make([]string, n),
		Names: make([]*string, n), Phones: make([]*string, n), TagFrom: make([]int32, n), TagCount: make([]int32, n),
		AssignedUserEmailIds: make([]*string, n), CrmNames: make([]*string, n), CrmUrls: make([]*string, n),
		CrmSources: make([]*string, n), CrmStages: make([]*string, n), CrmCreatedDates: make([]*string, n),
		ConsentTokens: make([]string, n), ConsentFields: make([][]byte, n), ActiveProperties: make([][]byte, n),
		Tags:        []string{},
		PropertyIds: []uuid.UUID{}, PropertyContactIds: []uuid.UUID{}, RawAddresses: []string{}, AptOrUnitNumbers: []string{},
		StreetAddresses: []string{}, Cities: []string{}, Counties: []string{}, States: []string{}, Zips: []string{},
		Normalized: []string{}, EventIds: []uuid.UUID{}, EventTypes: []string{}, EventContactIds: []uuid.UUID{},
		EventPayloads: []string{}, EventTraces: []string{}, EmailStatuses: make([]string, n), CustomFields: make([][]byte, n),
	}
	for i, p := range ps {
		m.ContactIds[i], m.Emails[i], m.EmailKeys[i], m.Names[i], m.Phones[i] = p.ContactID, p.Email, p.EmailKey, p.Name, p.Phone
		m.DigestFrom[i], m.DigestCount[i] = int32(len(m.SuppressionDigests)), int32(len(p.SuppressionDigests))
		m.SuppressionDigests = append(m.SuppressionDigests, p.SuppressionDigests...)
		m.TagFrom[i], m.TagCount[i] = int32(len(m.Tags)), int32(len(p.Tags))
		m.Tags = append(m.Tags, p.Tags...)
		m.AssignedUserEmailIds[i], m.CrmNames[i], m.CrmUrls[i] = p.AssignedUserEmailID, p.CrmName, p.CrmUrl
		m.CrmSources[i], m.CrmStages[i] = p.CrmSource, p.CrmStage
		if p.CrmCreatedDate != nil {
			// as text, the one nullable timestamptz: to the microsecond PostgreSQL keeps
			at := p.CrmCreatedDate.UTC().Format("2006-01-02T15:04:05.999999Z07:00")
			m.CrmCreatedDates[i] = &at
		}
		m.ConsentTokens[i], m.ConsentFields[i], m.ActiveProperties[i] = p.ConsentToken, p.ConsentFields, p.ActiveProperties
		m.EmailStatuses[i], m.CustomFields[i] = p.EmailStatus, p.CustomFields
		if p.PropertyID != nil {
			m.PropertyIds, m.PropertyContactIds = append(m.PropertyIds, *p.PropertyID), append(m.PropertyContactIds, p.ContactID)
			m.RawAddresses, m.AptOrUnitNumbers = append(m.RawAddresses, p.RawAddress), append(m.AptOrUnitNumbers, p.AptOrUnitNumber)
			m.StreetAddresses, m.Cities = append(m.StreetAddresses, p.StreetAddress), append(m.Cities, p.City)
			m.Counties, m.States, m.Zips = append(m.Counties, p.County), append(m.States, p.State), append(m.Zips, p.Zip)
			m.Normalized = append(m.Normalized, p.Normalized)
		}
		for k, id := range p.EventIds {
			m.EventIds, m.EventContactIds = append(m.EventIds, id), append(m.EventContactIds, p.ContactID)
			m.EventTypes, m.EventPayloads = append(m.EventTypes, p.EventTypes[k]), append(m.EventPayloads, p.EventPayloads[k])
			m.EventTraces = append(m.EventTraces, p.EventTraces[k])
		}
	}
	return m
}
