package delivery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/apitime"
	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/event"
	"github.com/contactd/contactd/internal/platform/metrics"
	"github.com/contactd/contactd/internal/platform/queue"
	"github.com/contactd/contactd/internal/platform/store"
	"github.com/contactd/contactd/internal/platform/tracing"
	"github.com/contactd/contactd/internal/subscription"
)

// QueueName names the delivery queue in /metrics.
const QueueName = "webhooks"

// FailingAfter is how many failed attempts in a row turn a subscription Failing.
const FailingAfter = 3

// Args identifies one attempt of one delivery: a retry, or the same attempt made again after
// its worker died, carries the delivery's event id, so receivers can tell repeats.
type Args struct {
	AccountID  uuid.UUID
	DeliveryID uuid.UUID
	Attempt    int
	// leaseEnds is when the claim's lease on the delivery ends (zero: not claimed)
	leaseEnds time.Time
	// dueAt is when the delivery was due before its claim; sweptAt is when the claims that
	// led to it last looked for its subscription's next delivery from the oldest (chainSweep)
	dueAt, sweptAt time.Time
}

// Service delivers events and answers questions about deliveries.
type Service struct {
	store *store.Store
	http  *http.Client
	// bytesRead counts what the workers read from receivers' sockets (ResponseBytesRead).
	bytesRead atomic.Int64
	timeout   time.Duration
	now       func() time.Time
	rnd       func() float64
	log       *slog.Logger
	metrics   *metrics.Metrics
	opt       Options
	queue     *queue.Queue
	secrets   *subscription.Secrets
	// stopping stops workers from going on to a subscription's next delivery (Stop).
	stopping atomic.Bool
	// saturated is set while the dispatcher's last claim filled every free worker: due
	// deliveries then outnumber the workers, and a freed worker goes back to the dispatcher,
	// whose claim shares the workers between accounts, instead of going on with its own
	// subscription (which would keep one account's backlog on every worker).
	saturated atomic.Bool
	// liveness remembers which accounts are live (uuid.UUID -> bool).
	liveness sync.Map
	// events emits the warnings of subscriptions that turn Failing.
	events *event.Emitter
	// nats publishes to the subscriptions that target a NATS JetStream subject (nil: none
	// configured).
	nats *natsPublisher
	// chains counts the workers attempting each subscription's deliveries, and leftToWorkers
	// the wakes left to them (Queued).
	chains        *chains
	leftToWorkers atomic.Int64
	// successes records the workers' successes together (succeed).
	successes *store.Group[Success, []db.DeliveryClaimRow]
}

var _ event.Enqueuer = (*Service)(nil)

// outcome is what one attempt came to.
type outcome struct {
	status     *int32
	latency    time.Duration
	err        string
	retryAfter time.Duration
	// excerpt is the start of the receiver's answer (nil: no body)
	excerpt *string
	// acked is a broker's acknowledgement (a queue destination), which has no status code
	acked bool
}

func (o outcome) ok() bool {
	return o.acked || (o.status != nil && *o.status >= 200 && *o.status < 300)
}
func (o outcome) gone() bool { return o.status != nil && *o.status == http.StatusGone }

// failure says how a failed attempt failed, for the subscription's health.
func (o outcome) failure() string {
	if o.status != nil {
		return fmt.Sprintf("HTTP %d", *o.status)
	}
	return o.err
}

func (o outcome) label() string {
	switch {
	case o.ok():
		return metrics.OutcomeSuccess
	case o.gone():
		return metrics.OutcomeGone
	case o.status != nil:
		return metrics.OutcomeFailure
	}
	return metrics.OutcomeError
}

// Attempt loads a delivery, makes one attempt and records it: tests call it to drive attempts
// without waiting for the schedule; the workers have what it loads from their claim.
func (s *Service) Attempt(ctx context.Context, a Args) error {
	var d db.DeliveryLoadRow
	err := s.store.Do(ctx, func(q *db.Queries) (err error) {
		d, err = q.DeliveryLoad(ctx, db.DeliveryLoadParams{AccountID: a.AccountID, DeliveryID: a.DeliveryID})
		return err
	})
	if errors.Is(err, apperr.ErrNoRows) || (err == nil && int(d.Attempts) >= a.Attempt) {
		return nil // gone with its account, or this attempt was recorded already
	}
	if err != nil {
		return err
	}
	_, err = s.makeAttempt(ctx, a, d)
	return err
}

// attempt is a worker's attempt of a claimed delivery. A failure to record it (the database
// away) is logged; the lease then ends and the same attempt is made again.
// After a success it goes on with the subscription's next due delivery, while there is one,
// the service is not stopping, the workers are not saturated, no commit since the last claim
// wants a worker (the next claim shares the workers between accounts), and its lease is live
// for an attempt's timeout more: a claim counts a receiver's leases, and a worker whose
// lease another process may have seen end (a process frozen that long, or clocks apart)
// would add one where that claim counted none.
func (s *Service) attempt(ctx context.Context, a Args, d db.DeliveryLoadRow) {
	sub := d.SubscriptionID // the same for every delivery it goes on to
	s.chains.begin(sub)
	defer func() {
		if s.chains.end(sub) {
			s.queue.Wake()
		}
	}()
	for {
		o := s.send(ctx, a, d)
		goOn := o.ok() && ctx.Err() == nil && !s.stopping.Load() && !s.saturated.Load() && !s.queue.Wanted() && s.leaseLeft(a)
		var err error
		var more bool
		if goOn {
			a, d, more, err = s.recordAndClaimNext(ctx, a, d, o)
		} else {
			err = s.record(ctx, a, d, o)
		}
		if err != nil && ctx.Err() == nil {
			s.log.Warn("webhooks: recording an attempt failed; it will be made again",
				slog.String("delivery_id", a.DeliveryID.String()), slog.Any("error", err))
		}
		if !more {
			return
		}
	}
}

// leaseLeft reports that a's lease is live for an attempt's timeout more.
func (s *Service) leaseLeft(a Args) bool { return s.now().Add(s.timeout).Before(a.leaseEnds) }

// makeAttempt makes one attempt and records it; ok reports a success.
func (s *Service) makeAttempt(ctx context.Context, a Args, d db.DeliveryLoadRow) (ok bool, err error) {
	o := s.send(ctx, a, d)
	return o.ok(), s.record(ctx, a, d, o)
}

// send makes one attempt, unrecorded.
func (s *Service) send(ctx context.Context, a Args, d db.DeliveryLoadRow) outcome {
	if d.SubscriptionStatus == "Removed" {
		return outcome{err: "subscription removed"}
	}
	ctx, end := s.attemptSpan(ctx, a, d)
	o := s.post(ctx, a, d)
	end(o)
	s.metrics.ObserveAttempt(o.label(), o.latency)
	return o
}

// attemptSpan starts the attempt's span when tracing is on: a child of its event's span (the
// request that made the event, in whatever process), with a span link to it across the queue;
// a new trace for an event made untraced. Its attributes are ids, the type, the attempt and
// the receiver's host and answer: nothing of the contact.
func (s *Service) attemptSpan(ctx context.Context, a Args, d db.DeliveryLoadRow) (context.Context, func(outcome)) {
	if !tracing.Enabled() {
		return ctx, func(outcome) {}
	}
	var stored *string
	_ = s.store.Do(ctx, func(q *db.Queries) (err error) { // untraced if it cannot be read
		stored, err = q.EventTrace(ctx, db.EventTraceParams{AccountID: a.AccountID, EventID: d.EventID})
		return err
	})
	attrs := []attribute.KeyValue{attribute.String("contactd.account_id", a.AccountID.String()),
		attribute.String("contactd.subscription_id", d.SubscriptionID.String()), attribute.String("contactd.delivery_id", a.DeliveryID.String()),
		attribute.String("contactd.event_id", d.EventID.String()), attribute.String("contactd.event_type", d.EventType),
		attribute.Int("contactd.attempt", a.Attempt), attribute.String("http.request.method", http.MethodPost)}
	if u, err := url.Parse(d.Url); err == nil {
		attrs = append(attrs, attribute.String("server.address", u.Hostname()))
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...)}
	if stored != nil {
		if parent := tracing.Remote(*stored); parent.IsValid() {
			ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: parent,
				Attributes: []attribute.KeyValue{attribute.String("contactd.link", "event")}}))
		}
	}
	ctx, span := tracing.Tracer().Start(ctx, "webhook attempt "+d.EventType, opts...)
	return ctx, func(o outcome) {
		if o.status != nil {
			span.SetAttributes(attribute.Int("http.response.status_code", int(*o.status)))
		}
		if !o.ok() {
			span.SetStatus(codes.Error, o.label())
		}
		span.End()
	}
}

// post makes one attempt of d: the payload signed per Standard Webhooks, sent to its
// subscription's destination, an HTTP URL or a NATS JetStream subject (nats:<subject>).
func (s *Service) post(ctx context.Context, a Args, d db.DeliveryLoadRow) outcome {
	msg, failed := s.sign(ctx, a.AccountID, d)
	if failed != nil {
		return *failed
	}
	if subject, ok := subscription.NATSSubject(d.Url); ok {
		if s.nats == nil {
			return outcome{err: "this contactd has no NATS server configured (CONTACTD_NATS_URL)"}
		}
		var succeeded int32
		if err := s.store.Do(ctx, func(q *db.Queries) (err error) {
			succeeded, err = q.DeliverySuccesses(ctx, db.DeliverySuccessesParams{AccountID: a.AccountID, DeliveryID: a.DeliveryID})
			return err
		}); err != nil {
			return outcome{err: "could not read the delivery's attempts"}
		}
		return s.nats.publish(ctx, a, int(succeeded), subject, msg)
	}
	return s.postHTTP(ctx, d.Url, msg)
}

// message is a delivery as any destination sends it: the body, and the headers by the names
// Standard Webhooks gives them (NATS headers keep their case: verifiers look for these).
type message struct {
	body    []byte
	headers [][2]string
}

// sign builds d's body and signed headers; a failure is the attempt's outcome.
func (s *Service) sign(ctx context.Context, account uuid.UUID, d db.DeliveryLoadRow) (message, *outcome) {
	keys, err := s.secrets.Open(ctx, subscription.Sealed{Account: account, Subscription: d.SubscriptionID, InClear: d.Secret,
		Current: d.SecretSealed, Previous: d.PreviousSecretSealed, PreviousUntil: d.PreviousSecretUntil, Client: d.ClientSecretSealed})
	if err != nil {
		// never sent unsigned or signed wrong; the operator's log says why
		s.log.Error("webhooks: cannot open the signing secrets", slog.String("subscription_id", d.SubscriptionID.String()), slog.Any("error", err))
		return message{}, &outcome{err: "contactd could not open this subscription's signing secret"}
	}
	live, err := s.live(ctx, account)
	if err != nil {
		return message{}, &outcome{err: "contactd could not tell whether the account is live"}
	}
	body := make([]byte, 0, len(d.Payload)+32)
	body = append(append(append(body, `{"events":[`...), d.Payload...), `],"livemode":`...)
	body = append(strconv.AppendBool(body, live), '}')
	ts := time.Now().Unix()
	sig, err := Sign(keys.Current, d.EventID.String(), ts, body)
	if err == nil && keys.Previous != "" {
		var old string
		if old, err = Sign(keys.Previous, d.EventID.String(), ts, body); err == nil {
			sig += " " + old // Standard Webhooks: space-separated signatures, any may verify
		}
	}
	if err != nil {
		return message{}, &outcome{err: err.Error()}
	}
	return message{body: body, headers: [][2]string{
		{"Content-Type", "application/json"},
		{"User-Agent", "contactd-webhooks/1"},
		{"webhook-id", d.EventID.String()},
		{"webhook-timestamp", strconv.FormatInt(ts, 10)},
		{"webhook-signature", sig},
		{LegacySignatureHeader, SignLegacy(keys.Client, body)},
		{LivemodeHeader, strconv.FormatBool(live)},
	}}, nil
}

// postHTTP POSTs msg to a receiver's URL: any 2xx acknowledges it.
func (s *Service) postHTTP(ctx context.Context, target string, msg message) outcome {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(msg.body))
	if err != nil {
		return outcome{err: "invalid URL"}
	}
	for _, h := range msg.headers {
		req.Header.Set(h[0], h[1])
	}
	if tracing.Enabled() {
		otel.GetTextMapPropagator().Inject(ctx, propagation.HeaderCarrier(req.Header)) // traceparent: the attempt's span
	}
	start := time.Now()
	resp, err := s.http.Do(req)
	o := outcome{latency: time.Since(start)}
	if err != nil {
		o.err = describe(err)
		return o
	}
	head := make([]byte, excerptBytes)
	n, _ := io.ReadFull(resp.Body, head)
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	resp.Body.Close()
	code := int32(resp.StatusCode)
	o.status, o.excerpt = &code, excerpt(head[:n])
	if !o.ok() {
		o.err = fmt.Sprintf("receiver answered %d", resp.StatusCode)
		o.retryAfter = retryAfter(resp, time.Now())
	}
	return o
}

// excerptBytes is how much of a receiver's answer the delivery log keeps.
const excerptBytes = 256

// excerpt is the start of an answer as valid UTF-8 (a character cut at the end is dropped,
// invalid bytes replaced), or nil for an empty one.
func excerpt(b []byte) *string {
	if len(b) == 0 {
		return nil
	}
	if len(b) == excerptBytes {
		for i := 0; i < utf8.UTFMax && len(b) > 0 && !utf8.Valid(b); i++ {
			b = b[:len(b)-1]
		}
	}
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	s = strings.ReplaceAll(s, "\x00", "")
	return &s
}

// LivemodeHeader says whether a delivery is of live data ("true") or of the account's
// sandbox ("false"), as the payload's livemode does.
const LivemodeHeader = "Contactd-Livemode"

// live reports whether account is live (not a sandbox); a sandbox never becomes live, so the
// answer is kept.
func (s *Service) live(ctx context.Context, account uuid.UUID) (bool, error) {
	if s.opt.Live == nil {
		return true, nil
	}
	if v, ok := s.liveness.Load(account); ok {
		return v.(bool), nil
	}
	live, err := s.opt.Live(ctx, account)
	if err == nil {
		s.liveness.Store(account, live)
	}
	return live, err
}

// record stores an attempt's outcome: a success in one statement; a failure with its effect on
// the subscription and the next attempt's time, in one transaction.
func (s *Service) record(ctx context.Context, a Args, d db.DeliveryLoadRow, o outcome) error {
	now := s.now()
	if o.ok() {
		_, err := s.succeed(ctx, a, d, o, now, nil)
		return err
	}
	status, next := "Failed", (*time.Time)(nil)
	if delay, more := NextDelay(a.Attempt, o.retryAfter, s.rnd); more && !o.gone() && d.SubscriptionStatus != "Removed" {
		t := now.Add(delay)
		status, next = "Pending", &t
	}
	var errText *string
	if o.err != "" {
		errText = &o.err
	}
	return s.store.InTx(ctx, func(tx store.Tx) error {
		// the delivery's row first: its lock keeps the attempt from outliving a delivery deleted meanwhile
		if err := tx.DeliveryRecordAttempt(ctx, db.DeliveryRecordAttemptParams{AccountID: a.AccountID,
			DeliveryID: a.DeliveryID, Attempt: int32(a.Attempt), Status: status, NextAttemptAt: next, Now: now}); err != nil {
			return err
		}
		if err := tx.AttemptInsert(ctx, db.AttemptInsertParams{AccountID: a.AccountID, DeliveryID: a.DeliveryID,
			Attempt: int32(a.Attempt), AttemptedAt: now, ResponseStatus: o.status,
			LatencyMs: int32(o.latency.Milliseconds()), Error: errText, NextAttemptAt: next, ResponseExcerpt: o.excerpt}); err != nil {
			return err
		}
		if o.retryAfter > 0 && next != nil {
			// the receiver asked for time: its other deliveries wait as well
			if err := tx.SubscriptionHoldBack(ctx, db.SubscriptionHoldBackParams{AccountID: a.AccountID,
				SubscriptionID: d.SubscriptionID, Until: *next}); err != nil {
				return err
			}
		}
		return s.updateSubscription(ctx, tx, a.AccountID, d.SubscriptionID, o, now)
	})
}

// updateSubscription records a failed attempt on its subscription.
func (s *Service) updateSubscription(ctx context.Context, tx store.Tx, account, sub uuid.UUID, o outcome, now time.Time) error {
	switch {
	case o.gone():
		if _, err := tx.SubscriptionRemove(ctx, db.SubscriptionRemoveParams{AccountID: account, SubscriptionID: sub, Now: now,
			Reason: subscription.RemovedGone}); err != nil {
			return err
		}
		return event.Announce(ctx, tx, account)
	case o.err == "subscription removed":
		return nil
	}
	rows, err := tx.SubscriptionRecordFailure(ctx, db.SubscriptionRecordFailureParams{AccountID: account,
		SubscriptionID: sub, FailingAfter: FailingAfter, Now: &now, Failure: o.failure()})
	if err != nil || len(rows) == 0 || !rows[0].TurnedFailing {
		return err
	}
	return s.warnFailing(ctx, tx, account, rows[0], now)
}

// warnFailing tells the account's other subscriptions to SubscriptionFailing that one of its
// subscriptions turned Failing, in the transaction that turned it: the warning comes once
// per turn, and before the sweep can remove it.
func (s *Service) warnFailing(ctx context.Context, tx store.Tx, account uuid.UUID, r db.SubscriptionRecordFailureRow, now time.Time) error {
	info := event.SubscriptionFailingInfo{SubscriptionID: r.SubscriptionID.String(),
		EventType: event.EventType(r.EventType), FailingSince: apitime.From(now),
		RemovalAt: apitime.From(subscription.RemovalAt(r.LastSuccessAt, r.CreatedAt)), ConsecutiveFailures: int(r.ConsecutiveFailures),
		LastFailure: r.Failure}
	return s.events.EmitAbout(ctx, tx, account, event.Event{Type: event.SubscriptionFailing, Info: info, At: now}, r.SubscriptionID)
}

func defaultRand() float64 { return rand.Float64() }
