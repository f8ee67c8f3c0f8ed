package httpapi

import (
	"bufio"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/csv"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/apitime"
	"github.com/contactd/contactd/internal/contact"
	"github.com/contactd/contactd/internal/contact/search"
	"github.com/contactd/contactd/internal/csvcell"
	"github.com/contactd/contactd/internal/field"
)

// ListContacts implements GET /public/v1/contacts.
func (s *Server) ListContacts(ctx context.Context, req api.ListContactsRequestObject) (api.ListContactsResponseObject, error) {
	p := req.Params
	o := search.ListOptions{Filter: listFilter(p), Limit: 50}
	if p.Limit != nil {
		o.Limit = *p.Limit
	}
	if p.Sort != nil {
		o.Sort = string(*p.Sort)
	}
	if p.Cursor != nil {
		o.Cursor = *p.Cursor
	}
	cs, next, err := s.search.List(ctx, principal(ctx).AccountID, o)
	if err != nil {
		return nil, err
	}
	out := contactListResponse{contacts: make([]api.Contact, len(cs)), next: next}
	for i, c := range cs {
		out.contacts[i] = s.contactToAPI(c)
	}
	return out, nil
}

func listFilter(p api.ListContactsParams) search.Filter {
	f := search.Filter{EmailStatus: (*string)(p.EmailStatus), RecordStatus: (*string)(p.RecordStatus),
		AssignedUser: p.AssignedUserEmailId, CreatedAfter: timeOf(p.CreatedAfter), CreatedBefore: timeOf(p.CreatedBefore),
		UpdatedAfter: timeOf(p.UpdatedAfter), MinLeadScore: p.MinLeadScore, Q: p.Q}
	if p.Tag != nil {
		f.Tags = *p.Tag
	}
	if p.Field != nil {
		f.Fields = *p.Field
	}
	return f
}

func timeOf(t *apitime.Time) *time.Time {
	if t == nil {
		return nil
	}
	return &t.Time
}

// contactListResponse writes a page of contacts with the contact appender.
type contactListResponse struct {
	contacts []api.Contact
	next     string
}

func (r contactListResponse) VisitListContactsResponse(w http.ResponseWriter) error {
	b := make([]byte, 0, 1024*(len(r.contacts)+1))
	b = append(b, `{"contacts":[`...)
	for i := range r.contacts {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendContact(b, &r.contacts[i])
	}
	b = append(b, ']')
	if r.next != "" {
		b = append(b, ',')
		b = appendField(b, "nextCursor", r.next)
	}
	b = append(b, "}\n"...)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b))) // one write, not chunks
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(b)
	return err
}

// ExportContacts implements GET /public/v1/contacts/export: the contacts are streamed while
// they are read, after the handler returns (exportResponse).
func (s *Server) ExportContacts(ctx context.Context, req api.ExportContactsRequestObject) (api.ExportContactsResponseObject, error) {
	p := req.Params
	f := listFilter(api.ListContactsParams{Tag: p.Tag, EmailStatus: p.EmailStatus, RecordStatus: p.RecordStatus,
		AssignedUserEmailId: p.AssignedUserEmailId, CreatedAfter: p.CreatedAfter, CreatedBefore: p.CreatedBefore,
		UpdatedAfter: p.UpdatedAfter, MinLeadScore: p.MinLeadScore, Q: p.Q, Field: p.Field})
	cl := clientOf(ctx)
	return exportResponse{s: s, ctx: ctx, filter: f, csv: prefersCSV(cl.accept), gzip: acceptsGzip(cl.acceptEncoding),
		stall: cmp.Or(s.cfg.ExportStall, 30*time.Second)}, nil
}

// prefersCSV reports whether an Accept header asks for CSV rather than NDJSON.
func prefersCSV(accept string) bool { return strings.Contains(strings.ToLower(accept), "text/csv") }

// acceptsGzip reports whether an Accept-Encoding header takes gzip: named, with a weight
// above zero (q=0, q=0.0 and q=0.000 refuse it).
func acceptsGzip(acceptEncoding string) bool {
	for _, part := range strings.Split(acceptEncoding, ",") {
		enc, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(enc), "gzip") {
			continue
		}
		for _, param := range strings.Split(params, ";") {
			name, value, _ := strings.Cut(param, "=")
			if q, err := strconv.ParseFloat(strings.TrimSpace(value), 64); strings.EqualFold(strings.TrimSpace(name), "q") && err == nil && q <= 0 {
				return false
			}
		}
		return true
	}
	return false
}

type exportResponse struct {
	s      *Server
	ctx    context.Context
	filter search.Filter
	csv    bool
	gzip   bool
	stall  time.Duration
}

// VisitExportContactsResponse streams the export. The status line waits for the first bytes,
// so a filter refused, or a database that fails before any contact was read, is still
// answered with the error body; a failure after that breaks the connection, as a truncated
// stream must not look complete. Each write must be taken by the client within the stall
// bound (which replaces the server's write timeout for the stream): a client that stops
// reading gives back its connection to the database then, however long the export.
func (r exportResponse) VisitExportContactsResponse(w http.ResponseWriter) error {
	out := &lazyStart{w: w, rc: http.NewResponseController(w), stall: r.stall, start: func() {
		h := w.Header()
		h.Set("Content-Type", map[bool]string{true: "text/csv; charset=utf-8", false: "application/x-ndjson"}[r.csv])
		h.Set("Vary", "Accept, Accept-Encoding")
		if r.gzip {
			h.Set("Content-Encoding", "gzip")
		}
		w.WriteHeader(http.StatusOK)
	}}
	buf := bufio.NewWriterSize(out, 64<<10)
	var body interface {
		Write([]byte) (int, error)
	} = buf
	var zw *gzip.Writer
	if r.gzip {
		zw, _ = gzip.NewWriterLevel(buf, gzip.BestSpeed)
		body = zw
	}
	var csvw *csv.Writer
	header, fieldKeys := csvColumns, []string(nil)
	if r.csv {
		csvw = csv.NewWriter(body)
		fields, err := r.s.fields.List(r.ctx, principal(r.ctx).AccountID, true)
		if err != nil {
			return err // nothing is written yet: the error body
		}
		header = slices.Clone(csvColumns)
		for _, f := range fields {
			header, fieldKeys = append(header, "customFields."+f.Key), append(fieldKeys, f.Key)
		}
	}
	var line []byte
	wroteHeader := false
	err := r.s.search.Export(r.ctx, principal(r.ctx).AccountID, r.filter, func(c contact.Contact) error {
		a := r.s.contactToAPI(c)
		if csvw == nil {
			line = append(appendContact(line[:0], &a), '\n')
			_, err := body.Write(line)
			return err
		}
		if !wroteHeader {
			wroteHeader = true
			if err := csvw.Write(header); err != nil {
				return err
			}
		}
		row, err := csvFieldCells(csvRow(&a), c.CustomFields, fieldKeys)
		if err != nil {
			return err
		}
		for i := range row {
			row[i] = csvcell.Neutralize(row[i])
		}
		return csvw.Write(row)
	})
	if err != nil {
		if !out.started {
			if errors.Is(err, search.ErrTooManyExports) {
				w.Header().Set("Retry-After", "5")
			}
			return err
		}
		panic(http.ErrAbortHandler)
	}
	if csvw != nil {
		if !wroteHeader {
			_ = csvw.Write(header)
		}
		csvw.Flush()
		if err := csvw.Error(); err != nil {
			panic(http.ErrAbortHandler)
		}
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			panic(http.ErrAbortHandler)
		}
	}
	if err := buf.Flush(); err != nil {
		panic(http.ErrAbortHandler)
	}
	if !out.started {
		out.start()
		out.started = true
	}
	return nil
}

// lazyStart sends the status line and headers with the first bytes of the body.
type lazyStart struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	stall   time.Duration
	start   func()
	started bool
}

func (l *lazyStart) Write(p []byte) (int, error) {
	if !l.started {
		l.started = true
		l.start()
	}
	_ = l.rc.SetWriteDeadline(time.Now().Add(l.stall)) // unsupported writers (tests' recorders) need none
	return l.w.Write(p)
}

// csvColumns is the CSV export's header row (docs/api.md describes each column).
var csvColumns = []string{"contactId", "email", "name", "phone", "emailStatus", "recordStatus", "leadScore",
	"tags", "assignedUserEmailId", "createdAt", "updatedAt",
	"crmName", "crmUrl", "crmSource", "crmStage", "crmCreatedDate",
	"streetAddress", "aptOrUnitNumber", "city", "county", "state", "zip", "otherAddresses",
	"numOfFormSubmissions", "numOfEmailSends", "numOfEmailOpens", "numOfEmailClicks",
	"numOfDashboardViews", "numOfDashboardClicks", "numOfPostcardScans", "numOfAIHandoffs",
	"proofOfConsentUrl"}

func csvRow(c *api.Contact) []string {
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	ts := func(t *apitime.Time) string {
		if t == nil {
			return ""
		}
		return t.String()
	}
	var crm api.CrmFields
	if c.CrmFields != nil {
		crm = *c.CrmFields
	}
	var first api.Address
	var others []string
	for i, p := range c.Properties {
		if i == 0 {
			first = p.Address
			continue
		}
		others = append(others, oneLine(p.Address))
	}
	e := c.Engagement
	n := strconv.Itoa
	return []string{c.ContactId, c.Email, str(c.Name), str(c.Phone), string(c.EmailStatus), string(c.RecordStatus),
		n(c.LeadScore), strings.Join(c.Tags, ";"), str(c.AssignedUserEmailId), c.CreatedAt.String(), c.UpdatedAt.String(),
		str(crm.Name), str(crm.Url), str(crm.Source), str(crm.Stage), ts(crm.CreatedDate),
		first.StreetAddress, first.AptOrUnitNumber, first.City, first.County, first.State, first.Zip, strings.Join(others, ";"),
		n(e.NumOfFormSubmissions), n(e.NumOfEmailSends), n(e.NumOfEmailOpens), n(e.NumOfEmailClicks),
		n(e.NumOfDashboardViews), n(e.NumOfDashboardClicks), n(e.NumOfPostcardScans), n(e.NumOfAIHandoffs),
		c.ProofOfConsentUrl}
}

// csvFieldCells appends to row a cell per field of keys: the contact's value (a number as
// its shortest decimal, a multiEnum's options joined by ";"), or "" when it has none.
func csvFieldCells(row []string, stored []byte, keys []string) ([]string, error) {
	if len(keys) == 0 {
		return row, nil
	}
	values, err := field.ParseValues(stored)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		cell := ""
		switch v := values[k].(type) {
		case string:
			cell = v
		case float64:
			cell = strconv.FormatFloat(v, 'f', -1, 64)
		case bool:
			cell = strconv.FormatBool(v)
		case []any:
			parts := make([]string, len(v))
			for i, o := range v {
				parts[i], _ = o.(string)
			}
			cell = strings.Join(parts, ";")
		}
		row = append(row, cell)
	}
	return row, nil
}

// oneLine is an address as one line: "123 N Main St Apt 4, Springfield, IL 62704".
func oneLine(a api.Address) string {
	street := a.StreetAddress
	if a.AptOrUnitNumber != "" {
		street += " #" + a.AptOrUnitNumber
	}
	return strings.TrimSpace(street + ", " + a.City + ", " + strings.TrimSpace(a.State+" "+a.Zip))
}
