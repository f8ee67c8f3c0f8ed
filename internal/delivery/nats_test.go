package delivery_test

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/delivery"
	"github.com/contactd/contactd/internal/testkit"
)

// jetStream connects to a test's NATS server and makes the stream that takes every subject
// contactd publishes to.
func jetStream(t *testing.T, n *testkit.NATS) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(n.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func makeStream(t *testing.T, js jetstream.JetStream) {
	t.Helper()
	if _, err := js.CreateOrUpdateStream(context.Background(), jetstream.StreamConfig{Name: "CONTACTD", Subjects: []string{"contactd.>"}}); err != nil {
		t.Fatal(err)
	}
}

// nextMessage waits for the next message on subject (for Patience at most) and acknowledges it.
func nextMessage(t *testing.T, js jetstream.JetStream, consumer jetstream.Consumer) jetstream.Msg {
	t.Helper()
	deadline := time.Now().Add(testkit.Patience)
	for time.Now().Before(deadline) {
		msg, err := consumer.Next(jetstream.FetchMaxWait(time.Second))
		if err == nil {
			_ = msg.Ack()
			return msg
		}
	}
	t.Fatalf("no message within %v", testkit.Patience)
	return nil
}

// A subscription to nats:<subject> gets, on its account's subject of the operator's
// JetStream, the very body an HTTP receiver gets, with the Standard Webhooks headers that
// verify it; test events, redeliveries and replays go the same way, and the delivery log
// records the stream's acknowledgement. A subject outside the language, or nats: without a
// NATS server configured, is refused.
func TestNATSDestination(t *testing.T) {
	t.Parallel()
	n := testkit.StartNATS(t)
	js := jetStream(t, n)
	makeStream(t, js)
	a := testkit.NewAPI(t, testkit.LocalDelivery, func(c *testkit.Config) { c.NATSURL = n.URL })
	account, key := a.Account("acme")
	for _, bad := range []string{"nats:", "nats:crm.*", "nats:crm..tags", "nats:crm.>", "nats:crm tags"} {
		r := a.Do("POST", "/public/v1/webhooks", key, map[string]any{"url": bad, "eventType": "TagsAdded"})
		if e := r.Error(t); r.Status != 400 || e.Code != api.ErrorCodeInvalidRequest || !strings.Contains(string(r.Body), "body.url") {
			t.Errorf("%q: %d %s", bad, r.Status, r.Body)
		}
	}
	var sub api.WebhookSubscription
	r := a.Do("POST", "/public/v1/webhooks", key, map[string]any{"url": "nats:crm.contacts.tags", "eventType": "TagsAdded"})
	r.JSON(t, &sub)
	if r.Status != 200 || sub.Url != "nats:crm.contacts.tags" || sub.Secret == nil {
		t.Fatalf("subscribe nats: %d %s", r.Status, r.Body)
	}
	rc := testkit.NewReceiver(t) // an HTTP subscription beside it: the same bytes
	if r := a.Do("POST", "/public/v1/webhooks", key, map[string]any{"url": rc.URL, "eventType": "TagsAdded"}); r.Status != 200 {
		t.Fatalf("subscribe http: %d", r.Status)
	}
	subject := "contactd." + account.String() + ".crm.contacts.tags"
	consumer, err := js.CreateOrUpdateConsumer(context.Background(), "CONTACTD", jetstream.ConsumerConfig{
		FilterSubject: subject, AckPolicy: jetstream.AckExplicitPolicy, DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		t.Fatal(err)
	}
	a.StartWorkers()
	if r := a.Do("POST", "/public/v1/contact", key, map[string]any{"email": "nats@example.com", "tags": []string{"vip"}}); r.Status != 200 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	msg := nextMessage(t, js, consumer)
	overHTTP := rc.Next(t)
	if msg.Subject() != subject {
		t.Errorf("subject %q, want %q", msg.Subject(), subject)
	}
	if string(msg.Data()) != string(overHTTP.Body) {
		t.Errorf("the message is not the HTTP body byte for byte:\n%s\n%s", msg.Data(), overHTTP.Body)
	}
	testkit.ValidatePayload(t, msg.Data())
	verify := func(m jetstream.Msg) string {
		t.Helper()
		h := m.Headers()
		id, ts := h.Get("webhook-id"), h.Get("webhook-timestamp")
		sec, _ := strconv.ParseInt(ts, 10, 64)
		want, err := delivery.Sign(*sub.Secret, id, sec, m.Data())
		if err != nil || id == "" || !strings.Contains(h.Get("webhook-signature"), want) || h.Get("Content-Type") != "application/json" {
			t.Errorf("headers do not verify: %v (%v)", h, err)
		}
		return id
	}
	eventID := verify(msg)
	if eventID != overHTTP.Header.Get("webhook-id") {
		t.Errorf("webhook-id %s, the HTTP one %s", eventID, overHTTP.Header.Get("webhook-id"))
	}
	a.DeliveriesSettled(t)
	var log api.DeliveryAttemptList
	a.Do("GET", "/public/v1/webhooks/"+sub.SubscriptionId+"/deliveries", key, nil).JSON(t, &log)
	if len(log.Attempts) != 1 || log.Attempts[0].ResponseStatus != nil || log.Attempts[0].Error != nil ||
		log.Attempts[0].ResponseExcerpt == nil || *log.Attempts[0].ResponseExcerpt != `{"acknowledged":true,"duplicate":false}` {
		t.Fatalf("delivery log: %+v", log.Attempts)
	}

	// a redelivery by hand is a message of its own, with the same webhook-id
	if r := a.Do("POST", "/public/v1/webhooks/"+sub.SubscriptionId+"/deliveries/"+log.Attempts[0].DeliveryId+"/redeliver", key, nil); r.Status != 200 {
		t.Fatalf("redeliver: %d %s", r.Status, r.Body)
	}
	if id := verify(nextMessage(t, js, consumer)); id != eventID {
		t.Errorf("the redelivery's webhook-id %s, want %s", id, eventID)
	}
	// a test event
	if r := a.Do("POST", "/public/v1/webhooks/"+sub.SubscriptionId+"/test", key, nil); r.Status != 200 {
		t.Fatalf("test event: %d", r.Status)
	}
	test := nextMessage(t, js, consumer)
	verify(test)
	if !strings.Contains(string(test.Data()), `"contactId":"00000000-0000-7000-8000-000000000000"`) {
		t.Errorf("the test event: %s", test.Data())
	}
	// a replay
	r = a.Do("POST", "/public/v1/webhooks/"+sub.SubscriptionId+"/replay", key, map[string]any{
		"since": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339Nano), "until": time.Now().Add(time.Second).UTC().Format(time.RFC3339Nano)})
	var replay api.ReplayResult
	r.JSON(t, &replay)
	if r.Status != 200 || replay.Queued != 1 {
		t.Fatalf("replay: %d %s", r.Status, r.Body)
	}
	if id := verify(nextMessage(t, js, consumer)); id != eventID {
		t.Errorf("the replay's webhook-id %s, want %s", id, eventID)
	}

	// nats: needs a NATS server configured
	plain := testkit.NewAPI(t)
	_, plainKey := plain.Account("plain")
	if r := plain.Do("POST", "/public/v1/webhooks", plainKey, map[string]any{"url": "nats:crm.tags", "eventType": "TagsAdded"}); r.Status != 400 ||
		!strings.Contains(string(r.Body), "CONTACTD_NATS_URL") {
		t.Errorf("nats: without a NATS server: %d %s", r.Status, r.Body)
	}
}

// Retries behave as for HTTP: no stream for the subject, or the broker away, is a failure
// recorded with its reason and retried; the next attempt after the stream exists succeeds;
// three failures in a row make the subscription Failing. Attempts are driven one by one. The
// reasons recorded are worded for the subscription's owner: none names the operator's subject
// prefix, the broker's address or the client's own error, which the operator's log has.
func TestNATSDestinationRetries(t *testing.T) {
	t.Parallel()
	n := testkit.StartNATS(t)
	js := jetStream(t, n)
	a := testkit.NewAPI(t, testkit.LocalDelivery, func(c *testkit.Config) { c.NATSURL = n.URL })
	account, key := a.Account("acme")
	var sub api.WebhookSubscription
	a.Do("POST", "/public/v1/webhooks", key, map[string]any{"url": "nats:crm.tags", "eventType": "TagsAdded"}).JSON(t, &sub)
	operatorLog := &testkit.LogBuffer{}
	svc := delivery.New(a.Store, delivery.Options{Timeout: 2 * time.Second, Workers: 1, RescueAfter: time.Minute,
		Log: slog.New(slog.NewTextHandler(operatorLog, nil)), Secrets: a.Svc.Secrets, NATSURL: n.URL, NATSSubjectPrefix: "contactd"})
	testkit.StopAtEnd(t, svc.Stop)
	if r := a.Do("POST", "/public/v1/contact", key, map[string]any{"email": "retry@example.com", "tags": []string{"x"}}); r.Status != 200 {
		t.Fatalf("create: %d", r.Status)
	}
	var deliveryID uuid.UUID
	if err := a.Store.Pool.QueryRow(context.Background(), "SELECT delivery_id FROM webhook_deliveries").Scan(&deliveryID); err != nil {
		t.Fatal(err)
	}
	attempt := 0
	try := func() (status, lastErr string) {
		t.Helper()
		attempt++
		if err := svc.Attempt(context.Background(), delivery.Args{AccountID: account, DeliveryID: deliveryID, Attempt: attempt}); err != nil {
			t.Fatal(err)
		}
		var e *string
		if err := a.Store.Pool.QueryRow(context.Background(), `SELECT d.status, a.error FROM webhook_deliveries d
			JOIN webhook_attempts a USING (account_id, delivery_id) WHERE a.attempt = $1`, attempt).Scan(&status, &e); err != nil {
			t.Fatal(err)
		}
		if e != nil {
			lastErr = *e
		}
		return status, lastErr
	}
	if st, e := try(); st != "Pending" || e != "NATS: no stream takes this subscription's subject (crm.tags)" {
		t.Errorf("no stream: %s %q", st, e)
	}
	if !strings.Contains(operatorLog.String(), "no response from stream") {
		t.Errorf("the operator's log lacks the client's error: %s", operatorLog)
	}
	makeStream(t, js)
	// an earlier attempt's message that the stream stored, its acknowledgement lost on the way
	// back: the retry is the same message, which the stream keeps once and acknowledges as a
	// duplicate, the delivery's success
	lost := nats.NewMsg("contactd." + account.String() + ".crm.tags")
	lost.Data = []byte("{}")
	if _, err := js.PublishMsg(context.Background(), lost, jetstream.WithMsgID(delivery.MessageID(deliveryID, 0))); err != nil {
		t.Fatal(err)
	}
	if st, e := try(); st != "Succeeded" || e != "" {
		t.Errorf("with the stream: %s %q", st, e)
	}
	messages := func() uint64 {
		t.Helper()
		stream, err := js.Stream(context.Background(), "CONTACTD")
		if err != nil {
			t.Fatal(err)
		}
		info, err := stream.Info(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Msgs
	}
	var excerpt string
	if err := a.Store.Pool.QueryRow(context.Background(), `SELECT response_excerpt FROM webhook_attempts WHERE attempt = $1`, attempt).Scan(&excerpt); err != nil ||
		excerpt != `{"acknowledged":true,"duplicate":true}` || messages() != 1 {
		t.Errorf("the retry after a lost acknowledgement: %s (%v), the stream holds %d messages; want a duplicate, one message", excerpt, err, messages())
	}
	// a redelivery by hand after the success is a message of its own
	if r := a.Do("POST", "/public/v1/webhooks/"+sub.SubscriptionId+"/deliveries/"+deliveryID.String()+"/redeliver", key, nil); r.Status != 200 {
		t.Fatalf("redeliver: %d", r.Status)
	}
	if st, e := try(); st != "Succeeded" || e != "" || messages() != 2 {
		t.Errorf("redelivered by hand: %s %q, the stream holds %d messages; want 2", st, e, messages())
	}
	// the broker away: failures, and the third in a row makes the subscription Failing
	n.Stop()
	if r := a.Do("POST", "/public/v1/webhooks/"+sub.SubscriptionId+"/deliveries/"+deliveryID.String()+"/redeliver", key, nil); r.Status != 200 {
		t.Fatalf("redeliver: %d", r.Status)
	}
	for range 3 {
		if st, e := try(); st != "Pending" || (e != "NATS: could not reach the broker" && e != "NATS: timed out waiting for the stream's acknowledgement") {
			t.Errorf("the broker away: %s %q", st, e)
		}
	}
	if n := a.Count(t, `SELECT count(*) FROM webhook_attempts WHERE error ~ '127\.0\.0\.1|contactd\.|nats: '`); n != 0 {
		t.Errorf("%d attempts record the operator's addresses, subjects or the client's errors", n)
	}
	var status string
	if err := a.Store.Pool.QueryRow(context.Background(), "SELECT status FROM webhook_subscriptions").Scan(&status); err != nil || status != "Failing" {
		t.Errorf("subscription %s (%v), want Failing", status, err)
	}
}

// A broker that goes away delays only the subscriptions that publish to it: one account's
// three nats: subscriptions, each having succeeded once, then the broker killed, so their
// attempts wait for an acknowledgement that never comes; another account's HTTP receiver
// (with a filter, in play) meanwhile gets every one of its deliveries, and each nats:
// subscription holds at most its limit of attempts at once.
func TestABrokerAwayDelaysOnlyItsSubscriptions(t *testing.T) {
	t.Parallel()
	const maxInFlight = 4
	n := testkit.StartNATS(t)
	makeStream(t, jetStream(t, n))
	a := testkit.NewAPI(t, testkit.LocalDelivery, func(c *testkit.Config) {
		c.NATSURL = n.URL
		c.WebhookTimeout, c.WebhookRescueAfter, c.WebhookWorkers, c.WebhookMaxInFlight = time.Hour, 2*time.Hour, 16, maxInFlight
	})
	_, key := a.Account("queues")
	for i := range 3 {
		if r := a.Do("POST", "/public/v1/webhooks", key, map[string]any{"url": fmt.Sprintf("nats:q.%d", i), "eventType": "TagsAdded"}); r.Status != 200 {
			t.Fatalf("subscribe: %d %s", r.Status, r.Body)
		}
	}
	_, otherKey := a.Account("other")
	healthy := testkit.NewReceiver(t)
	if r := a.Do("POST", "/public/v1/webhooks", otherKey, map[string]any{"url": healthy.URL, "eventType": "TagsAdded",
		"filter": map[string]any{"data.tagsAddedInfo.tagsAdded": map[string]any{"$exists": true}}}); r.Status != 200 {
		t.Fatalf("subscribe: %d %s", r.Status, r.Body)
	}
	a.StartWorkers()
	create := func(key, email string, tags ...string) string {
		t.Helper()
		var c api.CreateContactResult
		r := a.Do("POST", "/public/v1/contact", key, map[string]any{"email": email, "tags": append([]string{}, tags...)})
		r.JSON(t, &c)
		if r.Status != 200 {
			t.Fatalf("create: %d %s", r.Status, r.Body)
		}
		return c.Contact.ContactId
	}
	queued := create(key, "queue@example.com", "first")
	testkit.Eventually(t, "each nats: subscription's first delivery acknowledged", func() bool {
		return a.Count(t, `SELECT count(*) FROM webhook_deliveries WHERE status = 'Succeeded'`) == 3
	})
	n.Stop()
	for i := range 10 {
		if r := a.Do("POST", "/public/v1/contact/"+queued+"/tags", key, map[string]any{"tags": []string{fmt.Sprintf("q%d", i)}}); r.Status != 200 {
			t.Fatalf("tags: %d", r.Status)
		}
	}
	testkit.Eventually(t, "the nats: subscriptions' attempts waiting on the broker", func() bool {
		return a.Count(t, `SELECT count(*) FROM webhook_deliveries WHERE leased_until IS NOT NULL`) >= 3
	})
	other := create(otherKey, "other@example.com")
	for i := range 10 {
		if r := a.Do("POST", "/public/v1/contact/"+other+"/tags", otherKey, map[string]any{"tags": []string{fmt.Sprintf("h%d", i)}}); r.Status != 200 {
			t.Fatalf("tags: %d", r.Status)
		}
		healthy.Next(t) // delivered while the broker is away
	}
	if most := a.Count(t, `SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM webhook_deliveries
		WHERE leased_until IS NOT NULL GROUP BY subscription_id) per`); most > maxInFlight {
		t.Errorf("a nats: subscription holds %d attempts at once, its limit is %d", most, maxInFlight)
	}
}

// The broker lost and back: attempts made while it is away fail, worded for the owner, and
// are retried; once it is back on the same port with the same store, every event is in the
// stream exactly once (a publish the client held while reconnecting and sent afterwards is
// the same message as its retry), and nothing is left pending.
func TestNATSBrokerLostAndBack(t *testing.T) {
	t.Parallel()
	n := testkit.StartNATS(t)
	makeStream(t, jetStream(t, n))
	a := testkit.NewAPI(t, testkit.LocalDelivery, func(c *testkit.Config) { c.NATSURL = n.URL })
	_, key := a.Account("queues")
	if r := a.Do("POST", "/public/v1/webhooks", key, map[string]any{"url": "nats:lost", "eventType": "TagsAdded"}); r.Status != 200 {
		t.Fatalf("subscribe: %d %s", r.Status, r.Body)
	}
	a.StartWorkers()
	var c api.CreateContactResult
	a.Do("POST", "/public/v1/contact", key, map[string]any{"email": "lost@example.com", "tags": []string{"first"}}).JSON(t, &c)
	testkit.Eventually(t, "the first delivery acknowledged", func() bool {
		return a.Count(t, `SELECT count(*) FROM webhook_deliveries WHERE status = 'Succeeded'`) == 1
	})
	n.Stop()
	const away = 5
	for i := range away {
		if r := a.Do("POST", "/public/v1/contact/"+c.Contact.ContactId+"/tags", key, map[string]any{"tags": []string{fmt.Sprintf("away%d", i)}}); r.Status != 200 {
			t.Fatalf("tags: %d %s", r.Status, r.Body)
		}
	}
	testkit.Eventually(t, "each delivery made while the broker is away failed once, a retry scheduled", func() bool {
		return a.Count(t, `SELECT count(*) FROM webhook_deliveries
			WHERE status = 'Pending' AND attempts = 1 AND leased_until IS NULL AND next_attempt_at IS NOT NULL`) == away
	})
	if worded := a.Count(t, `SELECT count(*) FROM webhook_attempts WHERE error LIKE 'NATS: %'`); worded != away {
		t.Errorf("%d of %d failed attempts worded for the owner", worded, away)
	}
	n.Restart(t)
	// each time round, the retries' schedule passed: an attempt made before the client has
	// reconnected fails again
	testkit.Eventually(t, "every delivery acknowledged once the broker is back", func() bool {
		if _, err := a.Store.Pool.Exec(context.Background(),
			`UPDATE webhook_deliveries SET next_attempt_at = now() WHERE status = 'Pending' AND leased_until IS NULL`); err != nil {
			t.Fatal(err)
		}
		return a.Count(t, `SELECT count(*) FROM webhook_deliveries WHERE status = 'Succeeded'`) == 1+away
	})
	stream, err := jetStream(t, n).Stream(context.Background(), "CONTACTD")
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1+away {
		t.Errorf("the stream holds %d messages for %d events", info.State.Msgs, 1+away)
	}
}
