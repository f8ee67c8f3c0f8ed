package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"html/template"
	"strconv"
	"strings"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/apitime"
)

// GetConsent implements GET /consent/{token}: the public proof-of-consent page, as JSON or,
// when the client prefers it (a browser), as HTML.
func (s *Server) GetConsent(ctx context.Context, req api.GetConsentRequestObject) (api.GetConsentResponseObject, error) {
	c, err := s.contacts.ConsentByToken(ctx, req.Token)
	if err != nil {
		return nil, err
	}
	rec := api.ConsentRecord{ContactId: c.ContactID.String(), CreatedAt: apitime.From(c.CreatedAt),
		ApiKeyName: c.KeyName, ApiKeyPrefix: c.KeyPrefix, SourceIp: c.SourceIP, UserAgent: c.UserAgent,
		Request: map[string]any{}}
	if err := json.Unmarshal(c.Request, &rec.Request); err != nil {
		return nil, err
	}
	cl := clientOf(ctx)
	if !prefersHTML(cl.accept) {
		return api.GetConsent200JSONResponse(rec), nil
	}
	var buf bytes.Buffer
	if err := consentPage.Execute(&buf, consentView(rec, c.Request)); err != nil {
		return nil, err
	}
	return api.GetConsent200TexthtmlResponse{Body: &buf, ContentLength: int64(buf.Len())}, nil
}

type consentData struct {
	api.ConsentRecord
	Created string
	Fields  string
}

func consentView(rec api.ConsentRecord, raw json.RawMessage) consentData {
	var pretty bytes.Buffer
	if json.Indent(&pretty, raw, "", "  ") != nil {
		pretty.Reset()
		pretty.Write(raw)
	}
	return consentData{ConsentRecord: rec, Created: apitime.From(rec.CreatedAt.Time).String(), Fields: pretty.String()}
}

var consentPage = template.Must(template.New("consent").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<meta name="robots" content="noindex"><title>Proof of consent</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:44rem;margin:2rem auto;padding:0 1rem;color:#222}
th{text-align:left;padding-right:1.5rem;vertical-align:top;font-weight:600}pre{background:#f4f4f4;padding:1rem;overflow:auto}</style>
</head><body>
<h1>Proof of consent</h1>
<p>This contact was added through the contactd API as recorded below.</p>
<table>
<tr><th>Contact</th><td>{{.ContactId}}</td></tr>
<tr><th>Created</th><td><time datetime="{{.Created}}">{{.Created}}</time></td></tr>
<tr><th>API key</th><td>{{.ApiKeyName}} ({{.ApiKeyPrefix}}…)</td></tr>
<tr><th>Source IP</th><td>{{.SourceIp}}</td></tr>
<tr><th>User agent</th><td>{{.UserAgent}}</td></tr>
</table>
<h2>Request</h2>
<pre>{{.Fields}}</pre>
</body></html>
`))

// prefersHTML reads an Accept header: HTML only when text/html ranks above JSON.
func prefersHTML(accept string) bool {
	qHTML, qJSON := 0.0, 0.0
	for _, part := range strings.Split(accept, ",") {
		fields := strings.Split(part, ";")
		mt := strings.ToLower(strings.TrimSpace(fields[0]))
		q := 1.0
		for _, p := range fields[1:] {
			if k, v, ok := strings.Cut(strings.TrimSpace(p), "="); ok && strings.EqualFold(k, "q") {
				if f, err := strconv.ParseFloat(v, 64); err == nil {
					q = f
				}
			}
		}
		switch mt {
		case "text/html":
			qHTML = max(qHTML, q)
		case "application/json":
			qJSON = max(qJSON, q)
		case "*/*", "application/*":
			qJSON = max(qJSON, q*0.999) // a wildcard ranks below an explicit type
		}
	}
	return qHTML > qJSON
}
