package delivery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// natsPublisher is the NATS JetStream destination (docs/decisions/0003-queue-destination.md):
// a delivery to nats:<subject> is published to <prefix>.<account id>.<subject>, so one
// account's subscriptions reach only its own subjects, with the HTTP body byte for byte and
// the Standard Webhooks headers as message headers; the stream's acknowledgement is the
// success, anything else (no stream takes the subject, the broker away) a failure retried on
// the same schedule as HTTP. One connection per process, made at the first attempt and kept
// (the client reconnects by itself).
//
// What an attempt records is read by the subscription's owner, a tenant of the operator's
// broker: as for HTTP (describe), its errors are worded in the owner's terms, while the
// client's own text (the broker's addresses, its resolver, its auth failures) goes to the
// operator's log only; and the acknowledgement is recorded without the stream's name or
// sequence, from which a tenant could count every tenant's messages.
type natsPublisher struct {
	url, prefix string
	timeout     time.Duration
	log         *slog.Logger

	mu sync.Mutex
	nc *nats.Conn
	js jetstream.JetStream
}

func newNATSPublisher(url, prefix string, timeout time.Duration, log *slog.Logger) *natsPublisher {
	if url == "" {
		return nil
	}
	return &natsPublisher{url: url, prefix: prefix, timeout: timeout, log: log}
}

func (p *natsPublisher) conn() (jetstream.JetStream, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.js != nil {
		return p.js, nil
	}
	nc, err := nats.Connect(p.url, nats.Name("contactd-webhooks"), nats.Timeout(p.timeout), nats.MaxReconnects(-1))
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	p.nc, p.js = nc, js
	return js, nil
}

// Subject is where a delivery of the account to subject goes.
func (p *natsPublisher) Subject(account uuid.UUID, subject string) string {
	return p.prefix + "." + account.String() + "." + subject
}

// publish sends msg, attempt a of its delivery, after succeeded of its attempts succeeded,
// and waits for the stream's acknowledgement. Its Nats-Msg-Id names the delivery and its
// successes so far: a retry after an attempt whose message the stream stored but whose
// acknowledgement was lost (a timeout, the connection dropped) is the same message, which
// JetStream drops within its duplicate window and acknowledges as a duplicate, the success;
// a redelivery by hand after a success, or a replay (a delivery of its own), is a new message.
func (p *natsPublisher) publish(ctx context.Context, a Args, succeeded int, subject string, msg message) outcome {
	start := time.Now()
	js, err := p.conn()
	if err != nil {
		return p.failed(a, err, "NATS: could not reach the broker", start)
	}
	m := nats.NewMsg(p.Subject(a.AccountID, subject))
	m.Data = msg.body
	for _, h := range msg.headers {
		m.Header[h[0]] = []string{h[1]}
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	ack, err := js.PublishMsg(ctx, m, jetstream.WithMsgID(MessageID(a.DeliveryID, succeeded)), jetstream.WithRetryAttempts(1))
	switch {
	case errors.Is(err, jetstream.ErrNoStreamResponse):
		return p.failed(a, err, "NATS: no stream takes this subscription's subject ("+subject+")", start)
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout):
		return p.failed(a, err, "NATS: timed out waiting for the stream's acknowledgement", start)
	case errors.Is(err, nats.ErrNoServers) || errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, nats.ErrDisconnected) ||
		errors.Is(err, nats.ErrConnectionReconnecting):
		return p.failed(a, err, "NATS: could not reach the broker", start)
	case err != nil:
		return p.failed(a, err, "NATS: the broker did not take the message", start)
	}
	excerpt := fmt.Sprintf(`{"acknowledged":true,"duplicate":%t}`, ack.Duplicate)
	return outcome{acked: true, excerpt: &excerpt, latency: time.Since(start)}
}

// failed is a failed attempt's outcome, worded for the subscription's owner; the client's
// error goes to the operator's log.
func (p *natsPublisher) failed(a Args, err error, worded string, start time.Time) outcome {
	p.log.Warn("webhooks: a NATS publish failed", slog.String("delivery_id", a.DeliveryID.String()),
		slog.Int("attempt", a.Attempt), slog.Any("error", err))
	return outcome{err: worded, latency: time.Since(start)}
}

func (p *natsPublisher) close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.nc != nil {
		p.nc.Close()
		p.nc, p.js = nil, nil
	}
}

// MessageID is the Nats-Msg-Id of a delivery's message after succeeded successful attempts.
func MessageID(delivery uuid.UUID, succeeded int) string {
	return fmt.Sprintf("%s.%d", delivery, succeeded)
}
