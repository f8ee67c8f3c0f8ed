package delivery_test

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/testkit"
)

// A receiver that resets the connection or answers 413 fails that attempt, which is retried
// with the same webhook-id; one that streams an endless answer is cut off after what the log
// keeps, its 2xx counted, and its connection closed rather than drained.
func TestHostileReceivers(t *testing.T) {
	t.Parallel()
	retried := func(t *testing.T, s *setup, wantStatus *int, wantError string) {
		t.Helper()
		first, second := s.rc.Next(t), s.rc.Next(t)
		if first.Header.Get("webhook-id") != second.Header.Get("webhook-id") || string(first.Body) != string(second.Body) {
			t.Errorf("the retry is another message: %s vs %s", first.Header.Get("webhook-id"), second.Header.Get("webhook-id"))
		}
		att := s.waitAttempts(t, 2)
		failed, ok := att[1], att[0]
		if failed.Attempt != 1 || failed.Error == nil || *failed.Error != wantError || failed.NextAttemptAt == nil ||
			(wantStatus == nil) != (failed.ResponseStatus == nil) || (wantStatus != nil && *failed.ResponseStatus != *wantStatus) {
			t.Errorf("failed attempt %+v, want error %q and status %v with a retry scheduled", failed, wantError, wantStatus)
		}
		if ok.Attempt != 2 || ok.ResponseStatus == nil || *ok.ResponseStatus != 204 || ok.Error != nil || ok.NextAttemptAt != nil {
			t.Errorf("retry %+v, want a 204 and nothing more scheduled", ok)
		}
		s.a.DeliveriesSettled(t)
		s.rc.None(t)
	}

	t.Run("connection reset", func(t *testing.T) {
		t.Parallel()
		s := newSetup(t, true)
		s.rc.Respond = func(n int, w http.ResponseWriter, _ *http.Request) {
			if n > 1 {
				w.WriteHeader(http.StatusNoContent)
				return
			}
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			conn.(*net.TCPConn).SetLinger(0) // a RST, not a FIN
			conn.Close()
		}
		s.addTags(t, "reset@example.com", "x")
		retried(t, s, nil, "the receiver closed the connection before answering")
	})

	t.Run("413", func(t *testing.T) {
		t.Parallel()
		s := newSetup(t, true)
		s.rc.Respond = func(n int, w http.ResponseWriter, _ *http.Request) {
			if n > 1 {
				w.WriteHeader(http.StatusNoContent)
				return
			}
			w.WriteHeader(http.StatusRequestEntityTooLarge)
			w.Write([]byte("too large"))
		}
		s.addTags(t, "large@example.com", "x")
		status := 413
		retried(t, s, &status, "receiver answered 413")
		if att := s.attempts(t); att[1].ResponseExcerpt == nil || *att[1].ResponseExcerpt != "too large" {
			t.Errorf("excerpt %v, want the receiver's answer", att[1].ResponseExcerpt)
		}
	})

	t.Run("endless answer", func(t *testing.T) {
		t.Parallel()
		s := newSetup(t, true)
		cut := make(chan int, 1)
		s.rc.Respond = func(_ int, w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusOK)
			chunk := []byte(strings.Repeat("x", 4096))
			written := 0
			for {
				n, err := w.Write(chunk)
				written += n
				if err != nil || r.Context().Err() != nil {
					cut <- written
					return
				}
			}
		}
		s.addTags(t, "endless@example.com", "x")
		s.rc.Next(t)
		att := s.waitAttempts(t, 1)
		if att[0].ResponseStatus == nil || *att[0].ResponseStatus != 200 || att[0].Error != nil || att[0].NextAttemptAt != nil ||
			att[0].ResponseExcerpt == nil || *att[0].ResponseExcerpt != strings.Repeat("x", 256) {
			t.Errorf("attempt %+v, want a 200 with the first 256 bytes kept", att[0])
		}
		select {
		case n := <-cut: // the sender hung up
			if n < 256 {
				t.Errorf("cut after %d bytes written, before the excerpt", n)
			}
		case <-time.After(testkit.Patience):
			t.Fatal("the receiver is still writing")
		}
		// what the sender took in from its socket: the answer's head, the excerpt and the 64 KiB
		// it drains, and what its reader buffers ahead (4 KiB) with the chunks' framing
		if read, limit := s.a.Svc.Deliveries.ResponseBytesRead(), int64(256+64<<10+8<<10); read < 256 || read > limit {
			t.Errorf("the sender read %d bytes from the receiver's socket, want at most %d", read, limit)
		}
		s.a.DeliveriesSettled(t)
		s.rc.None(t)
	})
}

// A receiver that goes away and comes back at the same address, twice: each time its events
// wait for it and arrive once it is back, under their own ids, and the subscription stays
// Active (two failures in a row are not three).
func TestAFlappingReceiverGetsEveryEvent(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t, testkit.LocalDelivery)
	_, key := a.Account("acme")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // down from the start
	got := make(chan testkit.Delivered, 10)
	up := func() *http.Server {
		t.Helper()
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("the receiver's address was taken while it was down: %v", err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got <- testkit.Delivered{Header: r.Header.Clone()}
			w.WriteHeader(http.StatusNoContent)
		})}
		go srv.Serve(ln)
		return srv
	}
	var sub api.WebhookSubscription
	if r := a.Do("POST", "/public/v1/webhooks", key, map[string]any{"url": "http://" + addr + "/hook", "eventType": "TagsAdded"}); r.Status != 200 {
		t.Fatalf("subscribe: %d %s", r.Status, r.Body)
	} else {
		r.JSON(t, &sub)
	}
	a.StartWorkers()
	s := &setup{a: a, key: key, sub: sub}
	for round, email := range []string{"flap1@example.com", "flap2@example.com"} {
		s.addTags(t, email, "x")
		att := s.waitAttempts(t, 2*round+1)
		// After the first round a connection the sender kept alive may still be in its pool
		// when the receiver goes: the attempt then finds it closed instead of refused.
		if e := att[0].Error; att[0].ResponseStatus != nil || e == nil || att[0].NextAttemptAt == nil ||
			*e != "the receiver refused the connection" && (round == 0 || *e != "the receiver closed the connection before answering") {
			t.Fatalf("round %d: attempt %+v (error %v), want refused with a retry scheduled", round, att[0], deref(e))
		}
		srv := up()
		var d testkit.Delivered
		select {
		case d = <-got:
		case <-time.After(testkit.Patience):
			t.Fatalf("round %d: the retry never came", round)
		}
		if d.Header.Get("webhook-id") != att[0].EventId {
			t.Errorf("round %d: delivered %s, want %s", round, d.Header.Get("webhook-id"), att[0].EventId)
		}
		if att := s.waitAttempts(t, 2*round+2); att[0].ResponseStatus == nil || *att[0].ResponseStatus != 204 || att[0].Attempt != 2 {
			t.Errorf("round %d: retry %+v", round, att[0])
		}
		if st := s.subscriptionStatus(t); st != api.Active {
			t.Errorf("round %d: status %s", round, st)
		}
		a.DeliveriesSettled(t)
		srv.Close()
	}
	select {
	case d := <-got:
		t.Errorf("an event arrived twice: %s", d.Header.Get("webhook-id"))
	default:
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
