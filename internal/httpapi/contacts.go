package httpapi

import (
	"context"
	"encoding/json"
	"time"

	"github.com/oapi-codegen/nullable"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/apicore"
	"github.com/contactd/contactd/internal/apitime"
	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/contact"
	"github.com/contactd/contactd/internal/erasure"
)

// CreateContact implements POST /public/v1/contact.
func (s *Server) CreateContact(ctx context.Context, req api.CreateContactRequestObject) (api.CreateContactResponseObject, error) {
	p := principal(ctx)
	fields := requestOf(ctx).body // the consent record keeps the request as the client sent it
	c, warnings, err := s.contacts.Create(ctx, p.AccountID, apicore.CreateInput(*req.Body, origin(ctx, p.KeyName, p.KeyPrefix), fields))
	if err != nil {
		return nil, err
	}
	ws := make([]api.Warning, len(warnings))
	for i, w := range warnings {
		ws[i] = api.Warning(w)
	}
	out := s.contactToAPI(c)
	return contactResponse{contact: &out, created: true, warnings: ws}, nil
}

// GetContact implements GET /public/v1/contact.
func (s *Server) GetContact(ctx context.Context, req api.GetContactRequestObject) (api.GetContactResponseObject, error) {
	var match *contact.Match
	switch p := req.Params; {
	case p.Field != nil && p.Value != nil:
		match = &contact.Match{Field: *p.Field, Value: *p.Value}
	case p.Field != nil || p.Value != nil:
		return nil, apperr.Invalid(apperr.Field("query", "required", "field and value come together"))
	}
	c, err := s.contacts.Get(ctx, principal(ctx).AccountID, req.Params.ContactId, req.Params.EmailId, match)
	if err != nil {
		return nil, err
	}
	out := s.contactToAPI(c)
	if req.Params.Include != nil && *req.Params.Include == api.Segments {
		ids, err := s.segments.Of(ctx, principal(ctx).AccountID, c.ID)
		if err != nil {
			return nil, err
		}
		segments := make([]string, len(ids))
		for i, id := range ids {
			segments[i] = id.String()
		}
		out.Segments = &segments
	}
	return contactResponse{contact: &out}, nil
}

// MergeContacts implements POST /public/v1/contacts/merge.
func (s *Server) MergeContacts(ctx context.Context, req api.MergeContactsRequestObject) (api.MergeContactsResponseObject, error) {
	in := contact.MergeInput{Primary: req.Body.PrimaryContactId, Duplicates: req.Body.DuplicateContactIds}
	if req.Body.DryRun != nil {
		in.DryRun = *req.Body.DryRun
	}
	m, err := s.contacts.Merge(ctx, principal(ctx).AccountID, in)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(m.Duplicates))
	for i, id := range m.Duplicates {
		ids[i] = id.String()
	}
	return api.MergeContacts200JSONResponse{Contact: s.contactToAPI(m.Contact), MergedContactIds: ids, DryRun: in.DryRun}, nil
}

// FindDuplicateContacts implements GET /public/v1/contacts/duplicates.
func (s *Server) FindDuplicateContacts(ctx context.Context, req api.FindDuplicateContactsRequestObject) (api.FindDuplicateContactsResponseObject, error) {
	by, cursor, limit := "", "", 25
	if req.Params.By != nil {
		by = string(*req.Params.By)
	}
	if req.Params.Cursor != nil {
		cursor = *req.Params.Cursor
	}
	if req.Params.Limit != nil {
		limit = *req.Params.Limit
	}
	page, err := s.search.Duplicates(ctx, principal(ctx).AccountID, by, cursor, limit)
	if err != nil {
		return nil, err
	}
	out := api.FindDuplicateContacts200JSONResponse{Groups: make([]api.DuplicateGroup, len(page.Groups))}
	for i, g := range page.Groups {
		ids := make([]string, len(g.ContactIDs))
		for j, id := range g.ContactIDs {
			ids[j] = id.String()
		}
		out.Groups[i] = api.DuplicateGroup{By: api.DuplicateGroupBy(g.By), Match: g.Match, Size: g.Size, ContactIds: ids}
	}
	if page.NextCursor != "" {
		out.NextCursor = &page.NextCursor
	}
	return out, nil
}

func origin(ctx context.Context, keyName, keyPrefix string) contact.Origin {
	cl := clientOf(ctx)
	return contact.Origin{KeyName: keyName, KeyPrefix: keyPrefix, SourceIP: cl.ip, UserAgent: cl.userAgent}
}

func (s *Server) contactToAPI(c contact.Contact) api.Contact {
	out := api.Contact{
		ContactId: c.ID.String(), Email: c.Email, Name: c.Name, Phone: c.Phone,
		EmailStatus: api.EmailStatus(c.EmailStatus), RecordStatus: api.RecordStatus(c.RecordStatus),
		CreatedAt: apitime.From(c.CreatedAt), UpdatedAt: apitime.From(c.UpdatedAt), Tags: c.Tags, LeadScore: c.LeadScore,
		AssignedUserEmailId: c.AssignedUserEmailID, ProofOfConsentUrl: s.contacts.ConsentURL(c),
		Properties: make([]api.Property, len(c.Properties)),
		Engagement: api.Engagement{
			NumOfFormSubmissions: c.Engagement.FormSubmissions, LastFormSubmissionDate: apitime.Ptr(c.Engagement.LastFormSubmission),
			NumOfEmailSends: c.Engagement.EmailSends, LastEmailSentDate: apitime.Ptr(c.Engagement.LastEmailSend),
			NumOfEmailOpens: c.Engagement.EmailOpens, LastEmailOpenDate: apitime.Ptr(c.Engagement.LastEmailOpen),
			NumOfEmailClicks: c.Engagement.EmailClicks, LastEmailClickDate: apitime.Ptr(c.Engagement.LastEmailClick),
			NumOfDashboardViews: c.Engagement.DashboardViews, LastDashboardViewedDate: apitime.Ptr(c.Engagement.LastDashboardView),
			NumOfDashboardClicks: c.Engagement.DashboardClicks, LastDashboardClickedDate: apitime.Ptr(c.Engagement.LastDashboardClick),
			NumOfPostcardScans: c.Engagement.PostcardScans, LastPostcardScanDate: apitime.Ptr(c.Engagement.LastPostcardScan),
			NumOfAIHandoffs: c.Engagement.AIHandoffs, LastAIHandoffDate: apitime.Ptr(c.Engagement.LastAIHandoff),
		},
	}
	if out.Tags == nil {
		out.Tags = []string{}
	}
	custom := api.CustomFields(c.CustomFields)
	if len(custom) == 0 {
		custom = api.CustomFields("{}")
	}
	out.CustomFields = &custom
	if c.MergedInto != nil {
		into := c.MergedInto.String()
		out.MergedInto = &into
	}
	for i, p := range c.Properties {
		a := p.Address
		out.Properties[i] = api.Property{PropertyId: p.ID.String(), Address: api.Address{
			AptOrUnitNumber: a.AptOrUnitNumber, StreetAddress: a.StreetAddress, City: a.City,
			County: a.County, State: a.State, Zip: a.Zip}}
	}
	if c.CRM != nil {
		out.CrmFields = &api.CrmFields{Name: c.CRM.Name, Url: c.CRM.URL, Source: c.CRM.Source,
			Stage: c.CRM.Stage, CreatedDate: apitime.Ptr(c.CRM.CreatedDate)}
	}
	return out
}

// UpdateContact implements PATCH /public/v1/contact/{contactId}.
func (s *Server) UpdateContact(ctx context.Context, req api.UpdateContactRequestObject) (api.UpdateContactResponseObject, error) {
	c, err := s.contacts.Update(ctx, principal(ctx).AccountID, req.ContactId, updateFromAPI(req.Body))
	if err != nil {
		return nil, err
	}
	out := s.contactToAPI(c)
	return contactResponse{contact: &out}, nil
}

// DeleteContact implements DELETE /public/v1/contact/{contactId}.
func (s *Server) DeleteContact(ctx context.Context, req api.DeleteContactRequestObject) (api.DeleteContactResponseObject, error) {
	if err := s.contacts.Delete(ctx, principal(ctx).AccountID, req.ContactId); err != nil {
		return nil, err
	}
	return api.DeleteContact204Response{}, nil
}

// EraseContact implements POST /public/v1/contact/{contactId}/erase.
func (s *Server) EraseContact(ctx context.Context, req api.EraseContactRequestObject) (api.EraseContactResponseObject, error) {
	p := principal(ctx)
	e, err := s.erasures.Erase(ctx, p.AccountID, req.ContactId, erasure.Requester{KeyID: p.KeyID, KeyPrefix: p.KeyPrefix, KeyName: p.KeyName})
	if err != nil {
		return nil, err
	}
	suppressed := make([]api.ErasureSuppressed, len(e.Suppressed))
	for i, k := range e.Suppressed {
		suppressed[i] = api.ErasureSuppressed(k)
	}
	return api.EraseContact200JSONResponse{ErasureId: e.ID.String(), ContactId: e.ContactID.String(),
		ErasedAt: apitime.From(e.ErasedAt), Suppressed: suppressed, EventsRedacted: e.EventsRedacted}, nil
}

func updateFromAPI(b *api.UpdateContactRequest) contact.UpdateInput {
	in := contact.UpdateInput{
		Name:                patchOf(b.Name, same[string]),
		Phone:               patchOf(b.Phone, same[string]),
		AssignedUserEmailID: patchOf(b.AssignedUserEmailId, func(e api.Email) string { return string(e) }),
		CRM:                 patchOf(b.CrmFields, crmPatch),
	}
	if b.CustomFields != nil {
		in.CustomFields = json.RawMessage(*b.CustomFields)
	}
	if b.Email != nil {
		e := string(*b.Email)
		in.Email = contact.Patch[string]{Set: true, Value: &e}
	}
	if b.RecordStatus != nil {
		r := string(*b.RecordStatus)
		in.RecordStatus = contact.Patch[string]{Set: true, Value: &r}
	}
	return in
}

func crmPatch(f api.CrmFieldsPatch) contact.CRMPatch {
	return contact.CRMPatch{
		Name: patchOf(f.Name, same[string]), URL: patchOf(f.Url, same[string]),
		Source: patchOf(f.Source, same[string]), Stage: patchOf(f.Stage, same[string]),
		CreatedDate: patchOf(f.CreatedDate, func(t apitime.Time) time.Time { return t.Time }),
	}
}

// patchOf turns a JSON field that may be absent, null or a value into a domain Patch.
func patchOf[T, U any](n nullable.Nullable[T], conv func(T) U) contact.Patch[U] {
	if !n.IsSpecified() {
		return contact.Patch[U]{}
	}
	if n.IsNull() {
		return contact.Patch[U]{Set: true}
	}
	v := conv(n.MustGet())
	return contact.Patch[U]{Set: true, Value: &v}
}

func same[T any](v T) T { return v }
