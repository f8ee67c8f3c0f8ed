package delivery

import (
	"context"
	"errors"
	"fmt"
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
type natsPublisher struct {
	url, prefix string
	timeout     time.Duration

	mu sync.Mutex
	nc *nats.Conn
	js jetstream.JetStream
}

func newNATSPublisher(url, prefix string, timeout time.Duration) *natsPublisher {
	if url == "" {
		return nil
	}
	return &natsPublisher{url: url, prefix: prefix, timeout: timeout}
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

// publish sends msg, attempt a of its delivery, and waits for the stream's acknowledgement.
// Its Nats-Msg-Id names the delivery and the attempt: JetStream drops a copy of the same
// attempt within its duplicate window (the client resending it when the acknowledgement was
// lost), while a retry, a redelivery by hand or a replay is a message of its own, as it is a
// request of its own over HTTP; consumers dedupe by webhook-id, as HTTP receivers do.
func (p *natsPublisher) publish(ctx context.Context, a Args, subject string, msg message) outcome {
	start := time.Now()
	js, err := p.conn()
	if err != nil {
		return outcome{err: "NATS: cannot connect: " + err.Error(), latency: time.Since(start)}
	}
	m := nats.NewMsg(p.Subject(a.AccountID, subject))
	m.Data = msg.body
	for _, h := range msg.headers {
		m.Header[h[0]] = []string{h[1]}
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	ack, err := js.PublishMsg(ctx, m, jetstream.WithMsgID(fmt.Sprintf("%s.%d", a.DeliveryID, a.Attempt)), jetstream.WithRetryAttempts(1))
	o := outcome{latency: time.Since(start)}
	switch {
	case errors.Is(err, jetstream.ErrNoStreamResponse):
		o.err = "NATS: no JetStream stream takes subject " + m.Subject
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout):
		o.err = "NATS: timed out waiting for the stream's acknowledgement"
	case err != nil:
		o.err = "NATS: " + err.Error()
	default:
		excerpt := fmt.Sprintf(`{"stream":%q,"seq":%d,"duplicate":%t}`, ack.Stream, ack.Sequence, ack.Duplicate)
		o.acked, o.excerpt = true, &excerpt
	}
	return o
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
