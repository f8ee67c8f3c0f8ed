package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/contact"
	"github.com/contactd/contactd/internal/delivery"
	"github.com/contactd/contactd/internal/event"
	"github.com/contactd/contactd/internal/testkit"
)

func feedPage(t *testing.T, a *testkit.API, key, query string) api.EventList {
	t.Helper()
	r := a.Do("GET", "/public/v1/events?"+query, key, nil)
	if r.Status != 200 {
		t.Fatalf("events %s: %d %s", query, r.Status, r.Body)
	}
	var l api.EventList
	r.JSON(t, &l)
	return l
}

// Every change's events are in the feed, subscribed to or not, in order, each as a receiver
// gets it; a poller resuming from its cursor gets only what is new.
func TestEventsFeed(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	a.DNS.SetMX("example.com", "mx.example.com")
	a.StartWorkers()
	_, key := a.Account("acme")
	id := createContact(t, a, key, map[string]any{"email": "feed@example.com", "tags": []string{"lead"}}).Contact.ContactId
	testkit.Eventually(t, "enrichment", func() bool {
		return getContact(t, a, key, id).EmailStatus == api.EmailStatusValid
	})
	a.Do("POST", "/public/v1/contact/"+id+"/tags", key, map[string]any{"tags": []string{"vip"}})
	a.Do("DELETE", "/public/v1/contact/"+id+"/tags", key, map[string]any{"tags": []string{"lead"}})
	activity(t, a, key, id, map[string]any{"type": "AIHandoff", "activityId": "h1"})

	// a poller: pages of 2, resuming from its cursor (an event shows once every older
	// transaction of the cluster has ended, so under load the last ones may take a moment)
	var types []string
	var all []api.WebhookEvent
	cursor := ""
	testkit.Eventually(t, "the five events", func() bool {
		q := "limit=2"
		if cursor != "" {
			q += "&after=" + url.QueryEscape(cursor)
		}
		l := feedPage(t, a, key, q)
		all = append(all, l.Events...)
		for _, e := range l.Events {
			types = append(types, string(e.EventType))
		}
		cursor = l.NextCursor
		return len(all) >= 5 && !l.HasMore
	})
	want := "TagsAdded ContactEnriched TagsAdded TagsRemoved FelixAIHandoff"
	if strings.Join(types, " ") != want {
		t.Fatalf("feed: %v, want %s", types, want)
	}
	if tags := all[2].Data.TagsAddedInfo; tags == nil || tags.TagsAdded[0] != "vip" || all[1].Data.ContactEnrichedInfo.EmailStatus == nil {
		t.Errorf("events %+v", all)
	}
	if l := feedPage(t, a, key, "after="+url.QueryEscape(cursor)); len(l.Events) != 0 || l.HasMore || l.NextCursor != cursor {
		t.Errorf("nothing new: %+v, want the same cursor back", l)
	}
	a.Do("POST", "/public/v1/contact/"+id+"/tags", key, map[string]any{"tags": []string{"late"}})
	var l api.EventList
	testkit.Eventually(t, "the next event", func() bool { l = feedPage(t, a, key, "after="+url.QueryEscape(cursor)); return len(l.Events) > 0 })
	if len(l.Events) != 1 || l.Events[0].Data.TagsAddedInfo.TagsAdded[0] != "late" {
		t.Errorf("after one more change: %+v", l.Events)
	}
	if l := feedPage(t, a, key, "eventType=TagsRemoved"); len(l.Events) != 1 || l.Events[0].EventType != api.EventTypeTagsRemoved {
		t.Errorf("eventType=TagsRemoved: %+v", l.Events)
	}

	// one event by id: the bytes the feed has
	r := a.Do("GET", "/public/v1/events/"+all[4].EventId, key, nil)
	var one api.WebhookEvent
	r.JSON(t, &one)
	if r.Status != 200 || one.EventId != all[4].EventId || one.Data.FelixAIHandoffInfo == nil || one.Data.FelixAIHandoffInfo.ActivityId != "h1" {
		t.Errorf("getEvent: %d %s", r.Status, r.Body)
	}
	for _, bad := range []string{"01939d3c-0000-7000-8000-000000000000", "not-an-id"} {
		if r := a.Do("GET", "/public/v1/events/"+bad, key, nil); r.Status != 404 || r.Error(t).Code != api.ErrorCodeEventDoesNotExist {
			t.Errorf("getEvent %s: %d %s", bad, r.Status, r.Body)
		}
	}
	for query, field := range map[string]string{"after=x": "query.after", "limit=1001": "query.limit", "eventType=Nope": "query.eventType"} {
		if r := a.Do("GET", "/public/v1/events?"+query, key, nil); r.Status != 400 || !strings.Contains(string(r.Body), `"field":"`+field+`"`) {
			t.Errorf("%s: %d %s", query, r.Status, r.Body)
		}
	}
}

// A replay sends a window of events to a subscription again, with their eventIds; those
// outside the window or of other types are not sent.
func TestReplayWindow(t *testing.T) {
	t.Parallel()
	a, _, key := deliveringAPI(t)
	rc := listen(t, a, key, "TagsAdded")
	var sub api.WebhookSubscription
	var list api.WebhookList
	a.Do("GET", "/public/v1/webhooks", key, nil).JSON(t, &list)
	sub = list.Webhooks[0]
	id := createContact(t, a, key, map[string]any{"email": "replay@example.com"}).Contact.ContactId
	var sent []string
	for _, tag := range []string{"a", "b", "c"} {
		a.Do("POST", "/public/v1/contact/"+id+"/tags", key, map[string]any{"tags": []string{tag}})
		sent = append(sent, nextEvent(t, rc).EventId)
	}
	a.Do("DELETE", "/public/v1/contact/"+id+"/tags", key, map[string]any{"tags": []string{"a"}}) // TagsRemoved: not this subscription's
	var occurred []time.Time
	for _, e := range sent {
		var at time.Time
		if err := a.Store.Pool.QueryRow(context.Background(), "SELECT occurred_at FROM webhook_events WHERE event_id = $1::uuid", e).Scan(&at); err != nil {
			t.Fatal(err)
		}
		occurred = append(occurred, at)
	}
	body := map[string]any{"since": occurred[1].Format("2006-01-02T15:04:05.000Z"), "until": time.Now().UTC().Add(time.Minute).Format("2006-01-02T15:04:05.000Z")}
	r := a.Do("POST", "/public/v1/webhooks/"+sub.SubscriptionId+"/replay", key, body)
	var res api.ReplayResult
	r.JSON(t, &res)
	if r.Status != 200 || res.Queued != 2 || res.SubscriptionId != sub.SubscriptionId {
		t.Fatalf("replay: %d %s", r.Status, r.Body)
	}
	got := map[string]bool{}
	for range sent[1:] {
		d := rc.Next(t)
		var p api.WebhookPayload
		_ = json.Unmarshal(d.Body, &p)
		if d.Header.Get("webhook-id") != p.Events[0].EventId {
			t.Errorf("webhook-id %s for event %s", d.Header.Get("webhook-id"), p.Events[0].EventId)
		}
		got[p.Events[0].EventId] = true
	}
	if !got[sent[1]] || !got[sent[2]] {
		t.Errorf("replayed %v, want %v", got, sent[1:])
	}
	a.DeliveriesSettled(t)
	rc.None(t)

	_, other := a.Account("other")
	if r := a.Do("POST", "/public/v1/webhooks/"+sub.SubscriptionId+"/replay", other, body); r.Status != 404 {
		t.Errorf("another account: %d %s", r.Status, r.Body)
	}
	for _, bad := range []map[string]any{
		{"since": body["until"], "until": body["since"]},
		{"since": "2026-01-01T00:00:00.000Z", "until": "2026-03-01T00:00:00.000Z"},
		{"since": body["since"]},
	} {
		if r := a.Do("POST", "/public/v1/webhooks/"+sub.SubscriptionId+"/replay", key, bad); r.Status != 400 {
			t.Errorf("window %v: %d %s", bad, r.Status, r.Body)
		}
	}
	a.Do("DELETE", "/public/v1/webhooks/"+sub.SubscriptionId, key, nil)
	if r := a.Do("POST", "/public/v1/webhooks/"+sub.SubscriptionId+"/replay", key, body); r.Status != 400 {
		t.Errorf("a removed subscription: %d %s", r.Status, r.Body)
	}
}

// A replay queues at most 10,000 events (a longer window is refused, 400, nothing queued),
// and none that would leave more than 10,000 of the subscription's deliveries pending (429
// with Retry-After, until those are delivered).
func TestReplaysAreBounded(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t) // no workers: what a replay queues stays pending
	account, key := a.Account("acme")
	var sub api.WebhookSubscription
	a.Do("POST", "/public/v1/webhooks", key, map[string]any{"url": "https://hooks.example.com/x", "eventType": "TagsAdded"}).JSON(t, &sub)
	day := time.Now().UTC().Truncate(24 * time.Hour).Add(-48 * time.Hour)
	seed := func(from time.Duration, n int) map[string]any {
		t.Helper()
		if _, err := a.Store.Pool.Exec(context.Background(), `INSERT INTO webhook_events (account_id, event_id, event_type, payload, occurred_at)
			SELECT $1, uuid_v7(at), 'TagsAdded', '{}', at FROM generate_series(1, $3::int) g, LATERAL (SELECT $2::timestamptz + g * interval '1 millisecond' AS at) t`,
			account, day.Add(from), n); err != nil {
			t.Fatal(err)
		}
		return map[string]any{"since": day.Add(from).Format("2006-01-02T15:04:05.000Z"), "until": day.Add(from + time.Hour).Format("2006-01-02T15:04:05.000Z")}
	}
	tooMany, first, second := seed(0, delivery.MaxReplayEvents+1), seed(2*time.Hour, 6000), seed(4*time.Hour, 6000)
	replay := func(body map[string]any) *testkit.Response {
		return a.Do("POST", "/public/v1/webhooks/"+sub.SubscriptionId+"/replay", key, body)
	}
	pending := func() int { return a.Count(t, `SELECT count(*) FROM webhook_deliveries WHERE status = 'Pending'`) }
	if r := replay(tooMany); r.Status != 400 || !strings.Contains(string(r.Body), `"reason":"maxEvents"`) || pending() != 0 {
		t.Errorf("a window of 10,001 events: %d %s, %d pending", r.Status, r.Body, pending())
	}
	var res api.ReplayResult
	if r := replay(first); r.Status != 200 {
		t.Fatalf("6,000 events: %d %s", r.Status, r.Body)
	} else if r.JSON(t, &res); res.Queued != 6000 {
		t.Fatalf("6,000 events: %s", r.Body)
	}
	r := replay(second)
	if r.Status != 429 || r.Header.Get("Retry-After") != "60" || r.Error(t).Code != api.ErrorCodeTooManyRequests || pending() != 6000 {
		t.Errorf("6,000 more with 6,000 pending: %d %q %s, %d pending", r.Status, r.Header.Get("Retry-After"), r.Body, pending())
	}
	if _, err := a.Store.Pool.Exec(context.Background(), `UPDATE webhook_deliveries SET status = 'Succeeded'`); err != nil {
		t.Fatal(err)
	}
	if r := replay(second); r.Status != 200 || pending() != 6000 {
		t.Errorf("6,000 more once the first were delivered: %d %s, %d pending", r.Status, r.Body, pending())
	}
}

// A page of the feed ends at about 1 MiB of events, with hasMore, however many were asked
// for: a reader of big events gets every one, once, in order, over more pages. Details over
// 8 KiB, or of more than 2,000 JSON values, are refused, naming the rule.
func TestFeedPagesAreBoundedInBytes(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	id := createContact(t, a, key, map[string]any{"email": "big@example.com"}).Contact.ContactId
	filler := strings.Repeat("x", contact.MaxActivityDetailsBytes-64)
	if _, r := activity(t, a, key, id, map[string]any{"type": "AIHandoff", "details": map[string]any{"note": filler + strings.Repeat("y", 100)}}); r.Status != 400 ||
		r.Error(t).Code != api.ErrorCodeInvalidRequest || !strings.Contains(string(r.Body), `"reason":"maxBytes"`) {
		t.Fatalf("details over 8 KiB: %d %s", r.Status, r.Body)
	}
	// within 8 KiB, 2,000 values at most: two arrays (each under the body's 1,000 items)
	values := func(n int) map[string]any {
		return map[string]any{"a": make([]int, 998), "b": make([]int, n-1-999-1)}
	}
	if _, r := activity(t, a, key, id, map[string]any{"type": "AIHandoff", "details": values(2001)}); r.Status != 400 ||
		!strings.Contains(string(r.Body), `"reason":"maxValues"`) || !strings.Contains(string(r.Body), `"field":"body.details"`) {
		t.Fatalf("details of 2,001 values: %d %s", r.Status, r.Body)
	}
	if _, r := activity(t, a, key, id, map[string]any{"type": "FormSubmission", "activityId": "values", "details": values(2000)}); r.Status != 200 {
		t.Fatalf("details of 2,000 values: %d %s", r.Status, r.Body)
	}
	const n = 300 // 300 events of 8 KiB: about 2.4 MiB
	for i := range n {
		if _, r := activity(t, a, key, id, map[string]any{"type": "AIHandoff", "activityId": fmt.Sprintf("h%03d", i),
			"details": map[string]any{"note": filler}}); r.Status != 200 {
			t.Fatalf("activity %d: %d %s", i, r.Status, r.Body)
		}
	}
	var handoffs []string
	pages, cursor := 0, ""
	testkit.Eventually(t, "every handoff", func() bool {
		q := "/public/v1/events?eventType=FelixAIHandoff&limit=1000"
		if cursor != "" {
			q += "&after=" + url.QueryEscape(cursor)
		}
		r := a.Do("GET", q, key, nil)
		if r.Status != 200 {
			t.Fatalf("feed: %d %s", r.Status, r.Body)
		}
		var l api.EventList
		r.JSON(t, &l)
		if len(r.Body) > event.MaxFeedPageBytes+2*contact.MaxActivityDetailsBytes {
			t.Fatalf("a page of %d bytes", len(r.Body))
		}
		if len(l.Events) > 0 {
			pages++
		}
		for _, e := range l.Events {
			handoffs = append(handoffs, e.EventId)
		}
		cursor = l.NextCursor
		t.Logf("page: %d events, %d bytes, hasMore %v, %d in all", len(l.Events), len(r.Body), l.HasMore, len(handoffs))
		return len(handoffs) >= n && !l.HasMore
	})
	seen := map[string]bool{}
	for _, h := range handoffs {
		seen[h] = true
	}
	if len(handoffs) != n || len(seen) != n {
		t.Errorf("%d handoffs read, want %d, each once", len(handoffs), n)
	}
	if pages < 3 {
		t.Errorf("%d pages of events for 2.4 MiB, want at least 3", pages)
	}
}
