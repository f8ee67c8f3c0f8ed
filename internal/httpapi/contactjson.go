package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/apitime"
)

// contactResponse is a 200 whose body is a contact (or a create's result): the bytes the
// generated responses would write with encoding/json (TestContactJSONMatchesEncodingJSON),
// appended field by field instead of through reflection, which was about 5 % of contactd's
// CPU on a read.
type contactResponse struct {
	contact  *api.Contact
	created  bool // a create's result: the contact and the warnings
	warnings []api.Warning
}

func (r contactResponse) VisitGetContactResponse(w http.ResponseWriter) error { return r.write(w) }

func (r contactResponse) VisitCreateContactResponse(w http.ResponseWriter) error { return r.write(w) }

func (r contactResponse) VisitUpdateContactResponse(w http.ResponseWriter) error { return r.write(w) }

func (r contactResponse) VisitAddContactPropertyResponse(w http.ResponseWriter) error {
	return r.write(w)
}

func (r contactResponse) VisitArchivePropertyResponse(w http.ResponseWriter) error { return r.write(w) }

var bodyBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

func (r contactResponse) write(w http.ResponseWriter) error {
	bp := bodyBuffers.Get().(*[]byte)
	defer bodyBuffers.Put(bp)
	b := (*bp)[:0]
	if r.created {
		b = append(b, `{"contact":`...)
		b = appendContact(b, r.contact)
		b = append(b, `,"warnings":[`...)
		for i, wn := range r.warnings {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, string(wn))
		}
		b = append(b, "]}"...)
	} else {
		b = appendContact(b, r.contact)
	}
	b = append(b, '\n') // as json.Encoder ends a value
	*bp = b
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(b)
	return err
}

// appendContact appends c's JSON: fields in the generated struct's order, omitempty fields
// left out when nil.
func appendContact(b []byte, c *api.Contact) []byte {
	b = append(b, '{')
	if c.AssignedUserEmailId != nil {
		b = appendField(b, "assignedUserEmailId", *c.AssignedUserEmailId)
		b = append(b, ',')
	}
	b = appendField(b, "contactId", c.ContactId)
	b = append(b, `,"createdAt":`...)
	b = appendTime(b, c.CreatedAt)
	if f := c.CrmFields; f != nil {
		b = append(b, `,"crmFields":{`...)
		n := len(b)
		b = appendOptionalTime(b, n, "createdDate", f.CreatedDate)
		b = appendOptional(b, n, "name", f.Name)
		b = appendOptional(b, n, "source", f.Source)
		b = appendOptional(b, n, "stage", f.Stage)
		b = appendOptional(b, n, "url", f.Url)
		b = append(b, '}')
	}
	if c.CustomFields != nil {
		b = append(b, `,"customFields":`...)
		b = appendRawJSON(b, *c.CustomFields)
	}
	b = append(b, ',')
	b = appendField(b, "email", c.Email)
	b = append(b, ',')
	b = appendField(b, "emailStatus", string(c.EmailStatus))
	b = append(b, `,"engagement":{`...)
	b = appendEngagement(b, &c.Engagement)
	b = append(b, `},"leadScore":`...)
	b = strconv.AppendInt(b, int64(c.LeadScore), 10)
	if c.MergedInto != nil {
		b = append(b, ',')
		b = appendField(b, "mergedInto", *c.MergedInto)
	}
	if c.Name != nil {
		b = append(b, ',')
		b = appendField(b, "name", *c.Name)
	}
	if c.Phone != nil {
		b = append(b, ',')
		b = appendField(b, "phone", *c.Phone)
	}
	b = append(b, ',')
	b = appendField(b, "proofOfConsentUrl", c.ProofOfConsentUrl)
	b = append(b, `,"properties":`...)
	if c.Properties == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range c.Properties {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendProperty(b, &c.Properties[i])
		}
		b = append(b, ']')
	}
	b = append(b, ',')
	b = appendField(b, "recordStatus", string(c.RecordStatus))
	if c.Segments != nil {
		b = append(b, `,"segments":`...)
		b = appendStrings(b, *c.Segments)
	}
	b = append(b, `,"tags":`...)
	b = appendStrings(b, c.Tags)
	b = append(b, `,"updatedAt":`...)
	b = appendTime(b, c.UpdatedAt)
	return append(b, '}')
}

// appendStrings appends list as a JSON array (null for nil, as encoding/json writes it).
func appendStrings(b []byte, list []string) []byte {
	if list == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, t := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, t)
	}
	return append(b, ']')
}

func appendEngagement(b []byte, e *api.Engagement) []byte {
	n := len(b)
	b = appendOptionalTime(b, n, "lastAIHandoffDate", e.LastAIHandoffDate)
	b = appendOptionalTime(b, n, "lastDashboardClickedDate", e.LastDashboardClickedDate)
	b = appendOptionalTime(b, n, "lastDashboardViewedDate", e.LastDashboardViewedDate)
	b = appendOptionalTime(b, n, "lastEmailClickDate", e.LastEmailClickDate)
	b = appendOptionalTime(b, n, "lastEmailOpenDate", e.LastEmailOpenDate)
	b = appendOptionalTime(b, n, "lastEmailSentDate", e.LastEmailSentDate)
	b = appendOptionalTime(b, n, "lastFormSubmissionDate", e.LastFormSubmissionDate)
	b = appendOptionalTime(b, n, "lastPostcardScanDate", e.LastPostcardScanDate)
	for _, f := range [...]struct {
		name string
		v    int
	}{
		{"numOfAIHandoffs", e.NumOfAIHandoffs},
		{"numOfDashboardClicks", e.NumOfDashboardClicks}, {"numOfDashboardViews", e.NumOfDashboardViews},
		{"numOfEmailClicks", e.NumOfEmailClicks}, {"numOfEmailOpens", e.NumOfEmailOpens},
		{"numOfEmailSends", e.NumOfEmailSends}, {"numOfFormSubmissions", e.NumOfFormSubmissions},
		{"numOfPostcardScans", e.NumOfPostcardScans},
	} {
		b = appendKey(b, n, f.name)
		b = strconv.AppendInt(b, int64(f.v), 10)
	}
	return b
}

func appendProperty(b []byte, p *api.Property) []byte {
	a := &p.Address
	b = append(b, `{"address":{`...)
	b = appendField(b, "aptOrUnitNumber", a.AptOrUnitNumber)
	b = append(b, ',')
	b = appendField(b, "city", a.City)
	b = append(b, ',')
	b = appendField(b, "county", a.County)
	b = append(b, ',')
	b = appendField(b, "state", a.State)
	b = append(b, ',')
	b = appendField(b, "streetAddress", a.StreetAddress)
	b = append(b, ',')
	b = appendField(b, "zip", a.Zip)
	b = append(b, `},`...)
	b = appendField(b, "propertyId", p.PropertyId)
	return append(b, '}')
}

// appendKey appends "name": after a comma unless it is the first member since offset start.
func appendKey(b []byte, start int, name string) []byte {
	if len(b) > start {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, name...)
	return append(b, `":`...)
}

func appendField(b []byte, name, v string) []byte {
	b = append(b, '"')
	b = append(b, name...)
	b = append(b, `":`...)
	return appendString(b, v)
}

func appendOptional(b []byte, start int, name string, v *string) []byte {
	if v == nil {
		return b
	}
	return appendString(appendKey(b, start, name), *v)
}

func appendOptionalTime(b []byte, start int, name string, v *apitime.Time) []byte {
	if v == nil {
		return b
	}
	return appendTime(appendKey(b, start, name), *v)
}

func appendTime(b []byte, t apitime.Time) []byte {
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, apitime.Layout)
	return append(b, '"')
}

// appendString appends s as a JSON string. Text that encoding/json writes as it is (printable
// ASCII other than the quote, the backslash and its HTML-escaped <, > and &) is copied; the
// rest goes through encoding/json, so escaping is always exactly its own.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendRawJSON appends raw (valid JSON: PostgreSQL's jsonb text) as encoding/json writes a
// json.RawMessage: compact, with <, > and & and the line separators U+2028 and U+2029 escaped
// in strings; one pass copying the runs between the bytes that change, no allocation (it runs
// for every contact read).
func appendRawJSON(b []byte, raw json.RawMessage) []byte {
	for i := 0; i < len(raw); {
		start := i
		for i < len(raw) && !outsideStops[raw[i]] {
			i++
		}
		b = append(b, raw[start:i]...)
		if i == len(raw) {
			break
		}
		if raw[i] != '"' { // space between tokens: dropped
			i++
			continue
		}
		b = append(b, '"')
		i++
		for i < len(raw) { // in a string, up to its closing quote
			start = i
			for i < len(raw) && !stringStops[raw[i]] {
				i++
			}
			b = append(b, raw[start:i]...)
			if i == len(raw) {
				break
			}
			c := raw[i]
			if c == '"' {
				b = append(b, c)
				i++
				break
			}
			switch {
			case c == '\\' && i+1 < len(raw):
				b = append(b, c, raw[i+1])
				i += 2
			case c == '<' || c == '>' || c == '&':
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
				i++
			case c == 0xe2 && i+2 < len(raw) && raw[i+1] == 0x80 && raw[i+2]&^1 == 0xa8:
				b = append(b, '\\', 'u', '2', '0', '2', hexDigits[raw[i+2]&0xf])
				i += 3
			default:
				b = append(b, c)
				i++
			}
		}
	}
	return b
}

// outsideStops are the bytes appendRawJSON stops at between strings: space, and a string's
// opening quote; stringStops those it stops at in a string.
var outsideStops, stringStops = func() (o, s [256]bool) {
	for _, c := range " \t\n\r\"" {
		o[c] = true
	}
	for _, c := range []byte("\"\\<>&\xe2") {
		s[c] = true
	}
	return o, s
}()

const hexDigits = "0123456789abcdef"
