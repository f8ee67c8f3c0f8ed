package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/testkit"
)

func activity(t *testing.T, a *testkit.API, key, id string, body map[string]any) (api.Contact, *testkit.Response) {
	t.Helper()
	r := a.Do("POST", "/public/v1/contact/"+id+"/activity", key, body)
	var c api.Contact
	if r.Status == http.StatusOK {
		r.JSON(t, &c)
	}
	return c, r
}

func TestActivityCountersAndScore(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	id := createContact(t, a, key, map[string]any{"email": "act@example.com"}).Contact.ContactId
	now := time.Now().UTC()
	recent := now.Add(-time.Hour).Format("2006-01-02T15:04:05.000Z")
	older := now.Add(-48 * time.Hour).Format("2006-01-02T15:04:05.000Z")

	c, r := activity(t, a, key, id, map[string]any{"type": "FormSubmission", "occurredAt": recent})
	if r.Status != 200 || c.Engagement.NumOfFormSubmissions != 1 || c.Engagement.LastFormSubmissionDate.String() != recent {
		t.Fatalf("first form: %d %s", r.Status, r.Body)
	}
	first := c.LeadScore
	if first <= 0 {
		t.Errorf("lead score after a form = %d, want > 0", first)
	}
	// an older report counts but does not move the last date back.
	c, _ = activity(t, a, key, id, map[string]any{"type": "FormSubmission", "occurredAt": older})
	if c.Engagement.NumOfFormSubmissions != 2 || c.Engagement.LastFormSubmissionDate.String() != recent || c.LeadScore < first {
		t.Errorf("older form: %+v score %d", c.Engagement, c.LeadScore)
	}
	for _, typ := range []string{"EmailSend", "EmailOpen", "EmailClick", "DashboardView", "DashboardClick", "PostcardScan", "AIHandoff"} {
		c, r = activity(t, a, key, id, map[string]any{"type": typ})
		if r.Status != 200 {
			t.Fatalf("%s: %d %s", typ, r.Status, r.Body)
		}
	}
	e := c.Engagement
	if e.NumOfEmailSends != 1 || e.NumOfEmailOpens != 1 || e.NumOfEmailClicks != 1 || e.NumOfDashboardViews != 1 ||
		e.NumOfDashboardClicks != 1 || e.NumOfPostcardScans != 1 || e.LastPostcardScanDate == nil || e.LastEmailSentDate == nil ||
		e.NumOfAIHandoffs != 1 || e.LastAIHandoffDate == nil {
		t.Errorf("engagement = %+v", e)
	}
	if c.LeadScore <= first || c.LeadScore > 100 {
		t.Errorf("lead score %d after more activity, was %d", c.LeadScore, first)
	}
	var stored int
	if err := a.Store.Pool.QueryRow(context.Background(), "SELECT lead_score FROM contacts").Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != c.LeadScore {
		t.Errorf("stored lead score %d, shown %d", stored, c.LeadScore)
	}
	future := now.Add(time.Hour).Format("2006-01-02T15:04:05.000Z")
	for body, field := range map[string]string{
		`{"type": "Teleport"}`: "body.type",
		`{}`:                   "body.type",
		`{"type": "EmailOpen", "occurredAt": "soon"}`:           "body.occurredAt",
		`{"type": "EmailOpen", "occurredAt": "` + future + `"}`: "body.occurredAt",
		`{"type": "EmailOpen", "activityId": "a b"}`:            "body.activityId",
		`{"type": "EmailOpen", "extra": 1}`:                     "body.extra",
	} {
		r := a.Do("POST", "/public/v1/contact/"+id+"/activity", key, body)
		if e := r.Error(t); r.Status != 400 || e.Data == nil || (*e.Data.Errors)[0].Field != field {
			t.Errorf("%s: %d %s, want 400 on %s", body, r.Status, r.Body, field)
		}
	}
	if _, r := activity(t, a, key, "01939d3c-0000-7000-8000-000000000000", map[string]any{"type": "EmailOpen"}); r.Status != 404 {
		t.Errorf("unknown contact: %d", r.Status)
	}
}

func TestActivityEventsAndIdempotency(t *testing.T) {
	t.Parallel()
	a, _, key := deliveringAPI(t)
	rcs := map[string]*testkit.Receiver{}
	for _, typ := range []string{"FormSubmission", "EmailClick", "DashboardClick", "PostcardScan", "ContactUnsubscribed", "FelixAIHandoff"} {
		rcs[typ] = listen(t, a, key, typ)
	}
	id := createContact(t, a, key, map[string]any{"email": "ev@example.com", "assignedUserEmailId": "agent@example.com"}).Contact.ContactId

	for _, typ := range []string{"FormSubmission", "EmailClick", "DashboardClick", "PostcardScan", "FelixAIHandoff"} {
		reported := typ
		if typ == "FelixAIHandoff" { // the original service's name for the event of an AIHandoff
			reported = "AIHandoff"
		}
		_, r := activity(t, a, key, id, map[string]any{"type": reported, "activityId": "ext-" + typ,
			"occurredAt": "2026-11-20T08:00:00.000Z", "details": map[string]any{"campaign": "fall", "n": 3}})
		if r.Status != 200 || r.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("%s: %d %s", typ, r.Status, r.Body)
		}
		ev := nextEvent(t, rcs[typ])
		var info *api.ActivityInfo
		switch typ {
		case "FormSubmission":
			info = ev.Data.FormSubmissionInfo
		case "EmailClick":
			info = ev.Data.EmailClickInfo
		case "DashboardClick":
			info = ev.Data.DashboardClickInfo
		case "PostcardScan":
			info = ev.Data.PostcardScanInfo
		case "FelixAIHandoff":
			info = ev.Data.FelixAIHandoffInfo
		}
		if string(ev.EventType) != typ || info == nil || info.ActivityId != "ext-"+typ ||
			info.OccurredAt.String() != "2026-11-20T08:00:00.000Z" || info.Details == nil || (*info.Details)["campaign"] != "fall" ||
			ev.Data.ContactInfo.ContactId != id || ev.Data.ContactInfo.AssignedUserEmailId != "agent@example.com" {
			t.Errorf("%s event = %+v", typ, ev)
		}
	}
	// the same activity id again: nothing changes, no event.
	c, r := activity(t, a, key, id, map[string]any{"type": "FormSubmission", "activityId": "ext-FormSubmission"})
	if r.Status != 200 || r.Header.Get("Idempotent-Replayed") != "true" || c.Engagement.NumOfFormSubmissions != 1 {
		t.Errorf("replay: %d %v %s", r.Status, r.Header, r.Body)
	}
	a.DeliveriesSettled(t)
	rcs["FormSubmission"].None(t)

	c, r = activity(t, a, key, id, map[string]any{"type": "Unsubscribe", "activityId": "unsub-1"})
	if r.Status != 200 || c.RecordStatus != api.NonMarketing {
		t.Fatalf("unsubscribe: %d %s", r.Status, r.Body)
	}
	ev := nextEvent(t, rcs["ContactUnsubscribed"])
	if u := ev.Data.ContactUnsubscribedInfo; u == nil || u.Source != "Activity" {
		t.Errorf("ContactUnsubscribed = %+v", ev.Data)
	}
	var n int
	if err := a.Store.Pool.QueryRow(context.Background(), "SELECT count(*) FROM activities").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 6 {
		t.Errorf("%d activities stored, want 6", n)
	}
}

func TestConsentPage(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	body := map[string]any{"email": "consent@example.com", "name": "Connie", "tags": []string{"web"}}
	c := createContact(t, a, key, body).Contact
	if !strings.HasPrefix(c.ProofOfConsentUrl, "http://contactd.test/consent/cs_") {
		t.Fatalf("proofOfConsentUrl = %q", c.ProofOfConsentUrl)
	}
	path := strings.TrimPrefix(c.ProofOfConsentUrl, "http://contactd.test")

	r := a.Do("GET", path, "", nil) // public: no key
	var rec api.ConsentRecord
	r.JSON(t, &rec)
	if r.Status != 200 || rec.ContactId != c.ContactId || rec.ApiKeyName != "acme-key" || rec.ApiKeyPrefix != key[:11] ||
		rec.SourceIp != "127.0.0.1" || !strings.HasPrefix(rec.UserAgent, "Go-http-client") ||
		rec.Request["email"] != "consent@example.com" || rec.Request["name"] != "Connie" {
		t.Fatalf("consent JSON: %d %s", r.Status, r.Body)
	}
	if strings.Contains(string(r.Body), key) {
		t.Errorf("the consent record shows the API key")
	}

	r = a.Do("GET", path, "", nil, "Accept", "text/html,application/xhtml+xml,*/*;q=0.8")
	html := string(r.Body)
	if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("consent HTML: %d %s", r.Status, r.Header)
	}
	for _, want := range []string{c.ContactId, key[:11], "127.0.0.1", "consent@example.com", rec.CreatedAt.String()} {
		if !strings.Contains(html, want) {
			t.Errorf("the HTML page lacks %q", want)
		}
	}
	if strings.Contains(html, key) {
		t.Errorf("the HTML page shows the API key")
	}
	if r := a.Do("GET", "/consent/cs_unknown", "", nil); r.Status != 404 || r.Error(t).Code != api.ErrorCodeNotFound {
		t.Errorf("unknown token: %d %s", r.Status, r.Body)
	}
	// the token opens the page: whoever reads the access log must not be able to
	token := strings.TrimPrefix(path, "/consent/")
	if logs := a.Logs.String(); strings.Contains(logs, token) || strings.Contains(logs, "cs_unknown") ||
		!strings.Contains(logs, `"path":"/consent/:token"`) {
		t.Errorf("the access log shows a consent token, or not the consent route:\n%s", logs)
	}
}
