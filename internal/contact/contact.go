// Package contact holds the domain rules of contacts: dedupe by email, defaults, tags,
// properties with parsed addresses, and the events their changes emit.
package contact

import (
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/address"
	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/event"
	"github.com/contactd/contactd/internal/field"
	"github.com/contactd/contactd/internal/platform/store"
	"github.com/contactd/contactd/internal/segment"
	"github.com/contactd/contactd/internal/suppression"
)

// Errors of this package.
var (
	ErrNotFound  = apperr.New(apperr.KindNotFound, "ContactDoesNotExist", "contact does not exist")
	errDuplicate = apperr.New(apperr.KindInvalid, "DuplicateContact", "a contact with this email already exists")
)

// Contact is a contact as the API shows it.
type Contact struct {
	ID                  uuid.UUID
	Email               string
	Name                *string
	Phone               *string
	EmailStatus         string
	RecordStatus        string
	Tags                []string
	LeadScore           int
	AssignedUserEmailID *string
	CRM                 *CRMFields
	ConsentToken        string
	Engagement          Engagement
	Properties          []Property
	// CustomFields are the contact's custom field values, a JSON object (field.Values).
	CustomFields []byte
	CreatedAt    time.Time
	UpdatedAt    time.Time
	// MergedInto is set when the contact was asked for by the id of a duplicate merged into
	// it: its own id.
	MergedInto *uuid.UUID
}

// CRMFields says where the contact lives in the account's CRM.
type CRMFields struct {
	Name, URL, Source, Stage *string
	CreatedDate              *time.Time
}

// Engagement counts what the contact did and when they last did it.
type Engagement struct {
	FormSubmissions, EmailSends, EmailOpens, EmailClicks, DashboardViews, DashboardClicks, PostcardScans int
	AIHandoffs                                                                                           int
	LastFormSubmission, LastEmailSend, LastEmailOpen, LastEmailClick                                     *time.Time
	LastDashboardView, LastDashboardClick, LastPostcardScan, LastAIHandoff                               *time.Time
}

// Property is a contact's address.
type Property struct {
	ID      uuid.UUID       `json:"propertyId"`
	Address address.Address `json:"-"`
}

// Origin is how a request reached contactd, recorded as proof of consent.
type Origin struct {
	KeyName, KeyPrefix, SourceIP, UserAgent string
}

// Service implements the contact operations.
type Service struct {
	store     *store.Store
	events    *event.Emitter
	now       func() time.Time
	publicURL string
	creates   *store.Group[db.ContactCreateParams, returned[db.ContactCreateRow]]
	tagSwaps  *store.Group[tagSwap, db.TagsSwapManyRow]
	// tagSwapRetries counts the swaps that found the tags changed since they were read
	tagSwapRetries atomic.Uint64
	tagsOf         *store.Group[db.TagsGetParams, returned[db.TagsGetRow]]
	byID           *store.Group[db.ContactGetByIDParams, returned[db.ContactRow]]
	byEmail        *store.Group[db.ContactGetByEmailParams, returned[db.ContactRow]]
	// suppressed are the erased people's emails and phones, which new contacts may not have.
	suppressed *suppression.List
	verdicts   Verdicts
	fields     *field.Service
	segments   *segment.Service
}

// EmailPending is a contact's email status until enrichment, or its create, decides it.
const EmailPending = "Pending"

// Verdicts knows some emails' statuses without asking DNS: a disposable domain's, or a domain's
// checked within the last minutes. The enrich package's Service is one.
type Verdicts interface {
	// KnownStatus is the email's status (Valid or Invalid) when it is known now.
	KnownStatus(email string) (status string, ok bool)
}

// Options tune a Service.
type Options struct {
	// PublicURL is the base of proof-of-consent URLs.
	PublicURL string
	// Suppressions is the suppression list creates check and erasures add to.
	Suppressions *suppression.List
	// Fields are the account's custom field definitions values are checked against (nil:
	// none, and customFields are refused).
	Fields *field.Service
	// Segments are the account's segments, whose membership every write keeps (nil: none).
	Segments *segment.Service
	// Verdicts lets creates decide an email's status themselves when no DNS is needed (nil:
	// every new contact waits for enrichment).
	Verdicts Verdicts
}

// NewService returns a Service. Changes that call for enrichment (a create, a new email, a
// new property) mark the contact due in their own statements; the enrich package's workers
// take it from there.
func NewService(st *store.Store, events *event.Emitter, now func() time.Time, o Options) *Service {
	return &Service{store: st, events: events, now: now, publicURL: strings.TrimRight(o.PublicURL, "/"), suppressed: o.Suppressions, verdicts: o.Verdicts, fields: o.Fields,
		segments: o.Segments,
		creates:  store.NewGroup(st, store.GroupOptions{Name: "contact_create"}, createContacts),
		// a tag change's read and swap fly one group at a time, as the workers' successes do: a
		// swap's group is one statement, which costs each swap less the larger it is (decisions/0005)
		tagSwaps: store.NewGroup(st, store.GroupOptions{Name: "tags_swap", MaxFlying: 1}, swapTagsOf),
		tagsOf:   store.NewGroup(st, store.GroupOptions{Name: "tags_get", MaxFlying: 1}, tagsOfContacts),
		byID:     store.NewGroup(st, store.GroupOptions{Name: "contact_get_by_id"}, contactsByID),
		byEmail:  store.NewGroup(st, store.GroupOptions{Name: "contact_get_by_email"}, contactsByEmail)}
}

// ConsentURL is the proof-of-consent page of a contact.
func (s *Service) ConsentURL(c Contact) string { return s.publicURL + "/consent/" + c.ConsentToken }

// EmailKey is the dedupe key of an email: trimmed and lower-cased.
func EmailKey(email string) string { return strings.ToLower(strings.TrimSpace(email)) }

// FromRow builds the API's contact from its row, active properties included; the lead score
// is computed for now, so it decays between activities too.
func (s *Service) FromRow(r db.ContactRow) (Contact, error) {
	props, err := propertiesOf(r.ActiveProperties)
	if err != nil {
		return Contact{}, err
	}
	c := Contact{
		ID: r.ContactID, Email: r.Email, Name: r.Name, Phone: r.Phone, EmailStatus: r.EmailStatus,
		RecordStatus: r.RecordStatus, Tags: r.Tags, LeadScore: int(r.LeadScore),
		AssignedUserEmailID: r.AssignedUserEmailID, ConsentToken: r.ConsentToken, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		Engagement: engagementOf(r), Properties: props, CustomFields: r.CustomFields,
	}
	c.LeadScore = LeadScore(c.Engagement, s.now())
	if r.CrmName != nil || r.CrmUrl != nil || r.CrmSource != nil || r.CrmStage != nil || r.CrmCreatedDate != nil {
		c.CRM = &CRMFields{Name: r.CrmName, URL: r.CrmUrl, Source: r.CrmSource, Stage: r.CrmStage, CreatedDate: r.CrmCreatedDate}
	}
	return c, nil
}

// engagementOf is the contact row's engagement counters.
func engagementOf(r db.ContactRow) Engagement {
	return Engagement{
		FormSubmissions: int(r.NumFormSubmissions), LastFormSubmission: r.LastFormSubmissionAt,
		EmailSends: int(r.NumEmailSends), LastEmailSend: r.LastEmailSendAt,
		EmailOpens: int(r.NumEmailOpens), LastEmailOpen: r.LastEmailOpenAt,
		EmailClicks: int(r.NumEmailClicks), LastEmailClick: r.LastEmailClickAt,
		DashboardViews: int(r.NumDashboardViews), LastDashboardView: r.LastDashboardViewAt,
		DashboardClicks: int(r.NumDashboardClicks), LastDashboardClick: r.LastDashboardClickAt,
		PostcardScans: int(r.NumPostcardScans), LastPostcardScan: r.LastPostcardScanAt,
		AIHandoffs: int(r.NumAiHandoffs), LastAIHandoff: r.LastAiHandoffAt,
	}
}

// contactInfo identifies c in webhook events.
func contactInfo(id uuid.UUID, email string, assigned *string) event.ContactInfo {
	ci := event.ContactInfo{ContactID: id.String(), EmailID: email}
	if assigned != nil {
		ci.AssignedUserEmailID = *assigned
	}
	return ci
}
