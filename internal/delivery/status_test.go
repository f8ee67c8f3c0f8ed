package delivery_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/delivery"
)

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// Status transitions, driven attempt by attempt with an injected clock: no real waits.
func TestSubscriptionStatusTransitions(t *testing.T) {
	t.Parallel()
	s := newSetup(t, false)
	ok := false
	var mu sync.Mutex
	s.rc.Respond = func(_ int, w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if ok {
			w.WriteHeader(200)
		} else {
			w.WriteHeader(500)
		}
	}
	setOK := func(v bool) { mu.Lock(); ok = v; mu.Unlock() }
	clk := &clock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	svc := delivery.New(s.a.Store, delivery.Options{Timeout: time.Second, AllowedNetworks: s.a.Cfg.WebhookAllowedNetworks,
		Workers: 1, RescueAfter: time.Minute, Now: clk.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Secrets: s.a.Svc.Secrets})
	s.addTags(t, "status@example.com", "x")
	var accountID, deliveryID uuid.UUID
	if err := s.a.Store.Pool.QueryRow(context.Background(), "SELECT account_id, delivery_id FROM webhook_deliveries").Scan(&accountID, &deliveryID); err != nil {
		t.Fatal(err)
	}
	attempt := 0
	try := func() {
		t.Helper()
		attempt++
		clk.Add(time.Minute)
		if err := svc.Attempt(context.Background(), delivery.Args{AccountID: accountID, DeliveryID: deliveryID, Attempt: attempt}); err != nil {
			t.Fatal(err)
		}
	}
	state := func() (api.SubscriptionStatus, string) {
		var st string
		var updated time.Time
		if err := s.a.Store.Pool.QueryRow(context.Background(), "SELECT status, updated_at FROM webhook_subscriptions").Scan(&st, &updated); err != nil {
			t.Fatal(err)
		}
		return api.SubscriptionStatus(st), updated.UTC().Format(time.RFC3339)
	}
	expect := func(want api.SubscriptionStatus, changedAt string) {
		t.Helper()
		if st, upd := state(); st != want || (changedAt != "" && upd != changedAt) {
			t.Fatalf("after attempt %d: %s updated %s, want %s updated %s", attempt, st, upd, want, changedAt)
		}
	}
	_, created := state()
	try()
	// the same attempt made again (as by a worker whose lease ended after it recorded it):
	// nothing is sent, nothing recorded twice
	<-s.rc.Got
	if err := svc.Attempt(context.Background(), delivery.Args{AccountID: accountID, DeliveryID: deliveryID, Attempt: attempt}); err != nil {
		t.Fatal(err)
	}
	s.rc.None(t)
	if n := s.a.Count(t, "SELECT count(*) FROM webhook_attempts"); n != 1 {
		t.Fatalf("%d attempts recorded after attempt 1 was made twice, want 1", n)
	}
	// a failure without Retry-After holds back only its own delivery, not the subscription
	if n := s.a.Count(t, "SELECT count(*) FROM webhook_subscriptions WHERE next_send_at IS NOT NULL"); n != 0 {
		t.Fatalf("a 500 without Retry-After held the subscription back")
	}
	try()
	expect(api.Active, created) // two failures: still Active, not touched
	try()
	expect(api.Failing, clk.Now().Format(time.RFC3339)) // the third in a row
	setOK(true)
	try()
	expect(api.Active, clk.Now().Format(time.RFC3339)) // back on the next success
	setOK(false)
	try()
	try()
	try()
	failingSince := clk.Now().Format(time.RFC3339)
	expect(api.Failing, failingSince)

	lastSuccess := clk.Now().Add(-3 * time.Minute)
	clk.now = lastSuccess.Add(removedAfter - time.Minute)
	if n, err := svc.Sweep(context.Background()); err != nil || n != 0 {
		t.Fatalf("sweep before 5 days: %d %v", n, err)
	}
	expect(api.Failing, failingSince)
	clk.Add(2 * time.Minute)
	if n, err := svc.Sweep(context.Background()); err != nil || n != 1 {
		t.Fatalf("sweep after 5 days: %d %v", n, err)
	}
	expect(api.Removed, clk.Now().Format(time.RFC3339))

	// a removed subscription gets nothing: the pending delivery fails without a request.
	for len(s.rc.Got) > 0 {
		<-s.rc.Got
	}
	try() // synchronous: a request it made is in the receiver's channel when it returns
	s.rc.None(t)
	var status string
	if err := s.a.Store.Pool.QueryRow(context.Background(), "SELECT status FROM webhook_deliveries").Scan(&status); err != nil {
		t.Fatal(err)
	}
	if status != "Failed" {
		t.Errorf("delivery %s, want Failed", status)
	}
	// a delivery gone (its account's, deleted) is no error: there is nothing left to attempt
	if _, err := s.a.Store.Pool.Exec(context.Background(), "DELETE FROM webhook_deliveries"); err != nil {
		t.Fatal(err)
	}
	if err := svc.Attempt(context.Background(), delivery.Args{AccountID: accountID, DeliveryID: deliveryID, Attempt: attempt + 1}); err != nil {
		t.Errorf("an attempt of a delivery that is gone: %v", err)
	}
	s.rc.None(t)
}

func TestDeleteRedeliverAndPaginate(t *testing.T) {
	t.Parallel()
	s := newSetup(t, true)
	for i := range 3 {
		s.addTags(t, "p"+string(rune('a'+i))+"@example.com", "x")
		s.rc.Next(t)
	}
	s.waitAttempts(t, 3)
	base := "/public/v1/webhooks/" + s.sub.SubscriptionId
	var page1, page2 api.DeliveryAttemptList
	s.a.Do("GET", base+"/deliveries?limit=2", s.key, nil).JSON(t, &page1)
	if len(page1.Attempts) != 2 || page1.NextCursor == nil {
		t.Fatalf("page 1: %+v", page1)
	}
	s.a.Do("GET", base+"/deliveries?limit=2&cursor="+*page1.NextCursor, s.key, nil).JSON(t, &page2)
	if len(page2.Attempts) != 1 || page2.NextCursor != nil || page2.Attempts[0].DeliveryId == page1.Attempts[1].DeliveryId {
		t.Fatalf("page 2: %+v", page2)
	}
	if !page1.Attempts[0].AttemptedAt.After(page2.Attempts[0].AttemptedAt.Time) && page1.Attempts[0].AttemptedAt != page2.Attempts[0].AttemptedAt {
		t.Errorf("not newest first")
	}
	if r := s.a.Do("GET", base+"/deliveries?cursor=garbage", s.key, nil); r.Status != 400 {
		t.Errorf("bad cursor: %d", r.Status)
	}

	oldest := page2.Attempts[0]
	r := s.a.Do("POST", base+"/deliveries/"+oldest.DeliveryId+"/redeliver", s.key, nil)
	var d api.Delivery
	r.JSON(t, &d)
	if r.Status != 200 || d.Status != api.DeliveryStatusPending || d.EventId != oldest.EventId {
		t.Fatalf("redeliver: %d %s", r.Status, r.Body)
	}
	again := s.rc.Next(t)
	if again.Header.Get("webhook-id") != oldest.EventId {
		t.Errorf("redelivered %s, want %s", again.Header.Get("webhook-id"), oldest.EventId)
	}

	// another account sees none of it.
	_, other := s.a.Account("other")
	for _, p := range []struct{ m, path string }{
		{"GET", base + "/deliveries"}, {"POST", base + "/deliveries/" + oldest.DeliveryId + "/redeliver"}, {"DELETE", base},
	} {
		if r := s.a.Do(p.m, p.path, other, nil); r.Status != 404 || r.Error(t).Code != api.ErrorCodeSubscriptionDoesNotExist {
			t.Errorf("%s %s as another account: %d %s", p.m, p.path, r.Status, r.Body)
		}
	}
	if r := s.a.Do("POST", base+"/deliveries/"+uuid.NewString()+"/redeliver", s.key, nil); r.Status != 404 || r.Error(t).Code != api.ErrorCodeDeliveryDoesNotExist {
		t.Errorf("unknown delivery: %d %s", r.Status, r.Body)
	}

	// DELETE removes; it is idempotent; removed subscriptions get nothing and cannot be redelivered to.
	for range 2 {
		if r := s.a.Do("DELETE", base, s.key, nil); r.Status != 204 || len(r.Body) != 0 {
			t.Fatalf("delete: %d %s", r.Status, r.Body)
		}
	}
	if st := s.subscriptionStatus(t); st != api.Removed {
		t.Errorf("status %s", st)
	}
	if r := s.a.Do("POST", base+"/deliveries/"+oldest.DeliveryId+"/redeliver", s.key, nil); r.Status != 400 {
		t.Errorf("redeliver to removed: %d %s", r.Status, r.Body)
	}
	if r := s.a.Do("DELETE", "/public/v1/webhooks/"+uuid.NewString(), s.key, nil); r.Status != 404 {
		t.Errorf("delete unknown: %d", r.Status)
	}
	s.addTags(t, "after@example.com", "x")
	s.a.DeliveriesSettled(t)
	s.rc.None(t)
}

// Whether an account is live is asked once and remembered (a sandbox never becomes live), but
// only an answer is remembered: a lookup that failed fails its attempt, unsigned and unsent,
// and the next attempt asks again, and carries the account's real livemode.
func TestLivenessIsRememberedOnlyWhenKnown(t *testing.T) {
	t.Parallel()
	s := newSetup(t, false)
	var asked atomic.Int32
	svc := delivery.New(s.a.Store, delivery.Options{Timeout: time.Second, AllowedNetworks: s.a.Cfg.WebhookAllowedNetworks,
		Workers: 1, RescueAfter: time.Minute, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Secrets: s.a.Svc.Secrets,
		Live: func(context.Context, uuid.UUID) (bool, error) {
			if asked.Add(1) == 1 {
				return false, errors.New("the database is away")
			}
			return true, nil
		}})
	s.addTags(t, "live-1@example.com", "x")
	s.addTags(t, "live-2@example.com", "x")
	rows, err := s.a.Store.Pool.Query(context.Background(), "SELECT account_id, delivery_id FROM webhook_deliveries ORDER BY delivery_id")
	if err != nil {
		t.Fatal(err)
	}
	var args []delivery.Args
	for rows.Next() {
		var a delivery.Args
		if err := rows.Scan(&a.AccountID, &a.DeliveryID); err != nil {
			t.Fatal(err)
		}
		args = append(args, a)
	}
	if err := rows.Err(); err != nil || len(args) != 2 {
		t.Fatalf("%d deliveries, %v", len(args), err)
	}
	for i, attempt := range []delivery.Args{{Attempt: 1}, {Attempt: 2}, {Attempt: 1}} {
		a := args[min(i/2, 1)]
		a.Attempt = attempt.Attempt
		if err := svc.Attempt(context.Background(), a); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			s.rc.None(t) // the lookup failed: nothing is sent
			continue
		}
		if got := s.rc.Next(t).Header.Get(delivery.LivemodeHeader); got != "true" {
			t.Errorf("attempt %d: %s %q, want \"true\"", i+1, delivery.LivemodeHeader, got)
		}
	}
	if n := asked.Load(); n != 2 {
		t.Errorf("asked %d times whether the account is live, want 2 (the failed lookup, then once)", n)
	}
}

// A subscription deleted while its attempt is in flight, an attempt that then fails: the
// attempt is recorded on its delivery, nothing on the subscription, which is gone, and the
// worker goes on.
func TestASubscriptionDeletedDuringAFailingAttempt(t *testing.T) {
	t.Parallel()
	s := newSetup(t, false)
	s.rc.Respond = func(_ int, w http.ResponseWriter, _ *http.Request) {
		if r := s.a.Do("DELETE", "/public/v1/webhooks/"+s.sub.SubscriptionId, s.key, nil); r.Status != 204 {
			t.Errorf("DELETE during the attempt: %d %s", r.Status, r.Body)
		}
		w.WriteHeader(http.StatusInternalServerError)
	}
	svc := delivery.New(s.a.Store, delivery.Options{Timeout: time.Minute, AllowedNetworks: s.a.Cfg.WebhookAllowedNetworks,
		Workers: 1, RescueAfter: time.Hour, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Secrets: s.a.Svc.Secrets})
	s.addTags(t, "deleted-during@example.com", "x")
	var a delivery.Args
	if err := s.a.Store.Pool.QueryRow(context.Background(), "SELECT account_id, delivery_id FROM webhook_deliveries").Scan(&a.AccountID, &a.DeliveryID); err != nil {
		t.Fatal(err)
	}
	a.Attempt = 1
	if err := svc.Attempt(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	s.rc.Next(t)
	if n := s.a.Count(t, `SELECT count(*) FROM webhook_attempts WHERE response_status = 500`); n != 1 {
		t.Errorf("%d attempts recorded, want the one that failed", n)
	}
	if n := s.a.Count(t, `SELECT count(*) FROM webhook_subscriptions WHERE status = 'Removed' AND consecutive_failures = 0`); n != 1 {
		t.Errorf("the deleted subscription was changed by the failure")
	}
}
