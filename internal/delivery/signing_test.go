package delivery_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"log/slog"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/delivery"
	"github.com/contactd/contactd/internal/subscription"
	"github.com/contactd/contactd/internal/testkit"
)

// verifyLegacy is what a receiver written for the original service does: the base64
// HMAC-SHA256 of the raw body, keyed with the base64-decoded account client secret.
func verifyLegacy(clientSecret string, body []byte, header string) bool {
	key, err := base64.StdEncoding.DecodeString(clientSecret)
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, key)
	mac.Write(body)
	got, err := base64.StdEncoding.DecodeString(header)
	return err == nil && hmac.Equal(got, mac.Sum(nil))
}

func verifies(secret string, d testkit.Delivered) error {
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		return err
	}
	return wh.Verify(d.Body, d.Header)
}

// A real delivery, as the receiver got it, verifies both ways: the Standard Webhooks
// signature with the subscription's secret, and the original service's body-only
// fello-webhook-signature with the account's client secret; a changed byte fails both.
func TestDeliveryVerifiesBothWays(t *testing.T) {
	t.Parallel()
	s := newSetup(t, true)
	account, err := s.a.Svc.Auth.AccountByName(context.Background(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	s.addTags(t, "both@example.com", "vip")
	d := s.rc.Next(t)
	client, err := s.a.Svc.Secrets.ClientSecret(context.Background(), account, false)
	if err != nil {
		t.Fatal(err)
	}
	if raw, err := base64.StdEncoding.DecodeString(client); err != nil || len(raw) < 24 {
		t.Fatalf("client secret %q: %d bytes (%v), want 24 or more, standard base64", client, len(raw), err)
	}
	if err := verifies(*s.sub.Secret, d); err != nil {
		t.Errorf("Standard Webhooks signature: %v", err)
	}
	legacy := d.Header.Get("fello-webhook-signature")
	if !verifyLegacy(client, d.Body, legacy) {
		t.Errorf("fello-webhook-signature %q does not verify with the client secret", legacy)
	}
	tampered := append([]byte{}, d.Body...)
	tampered[len(tampered)-3] ^= 1
	if verifyLegacy(client, tampered, legacy) || verifies(*s.sub.Secret, testkit.Delivered{Body: tampered, Header: d.Header}) == nil {
		t.Error("a tampered body verifies")
	}

	// a rotated client secret signs the deliveries from then on; the old one no longer does
	rotated, err := s.a.Svc.Secrets.ClientSecret(context.Background(), account, true)
	if err != nil || rotated == client {
		t.Fatalf("rotate: %q, %v", rotated, err)
	}
	s.addTags(t, "after@example.com", "vip")
	d = s.rc.Next(t)
	if legacy := d.Header.Get("fello-webhook-signature"); !verifyLegacy(rotated, d.Body, legacy) || verifyLegacy(client, d.Body, legacy) {
		t.Errorf("after rotating the client secret: verifies with new %v, with old %v",
			verifyLegacy(rotated, d.Body, legacy), verifyLegacy(client, d.Body, legacy))
	}
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// After POST .../secret, deliveries carry two signatures for 24 hours, so a receiver on the
// old secret and one on the new both verify; after 24 hours only the new one does.
func TestRotatedSecretSignsAlongsideTheOldFor24Hours(t *testing.T) {
	t.Parallel()
	s := newSetup(t, false)
	ctx := context.Background()
	account, _ := s.a.Svc.Auth.AccountByName(ctx, "acme")
	r := s.a.Do("POST", "/public/v1/webhooks/"+s.sub.SubscriptionId+"/secret", s.key, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("rotate: %d %s", r.Status, r.Body)
	}
	var rotated api.WebhookSecret
	r.JSON(t, &rotated)
	if rotated.SubscriptionId != s.sub.SubscriptionId || !strings.HasPrefix(rotated.Secret, "whsec_") || rotated.Secret == *s.sub.Secret {
		t.Fatalf("rotated %+v", rotated)
	}
	if until := rotated.PreviousSecretExpiresAt.Sub(time.Now()); until < 23*time.Hour || until > 25*time.Hour {
		t.Errorf("previous secret expires in %v, want 24 h", until)
	}
	if strings.Contains(string(s.a.Do("GET", "/public/v1/webhooks", s.key, nil).Body), rotated.Secret) {
		t.Error("the listing shows the new secret")
	}

	// deliveries made by workers on a clock of our own, from now to 24 h and more on
	keys, err := testkit.SecretKeys(s.a.Cfg)
	if err != nil {
		t.Fatal(err)
	}
	clk := &fakeClock{t: time.Now().UTC()}
	svc := delivery.New(s.a.Store, delivery.Options{Timeout: time.Second, AllowedNetworks: s.a.Cfg.WebhookAllowedNetworks,
		Workers: 1, RescueAfter: time.Minute, Now: clk.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Secrets: subscription.NewSecrets(s.a.Store, keys, clk.Now)})
	deliver := func(email string) testkit.Delivered {
		t.Helper()
		s.addTags(t, email, "x")
		var id uuid.UUID // the one Pending delivery: nothing else attempts them here
		if err := s.a.Store.Pool.QueryRow(ctx, `SELECT delivery_id FROM webhook_deliveries
			WHERE account_id = $1 AND status = 'Pending'`, account).Scan(&id); err != nil {
			t.Fatal(err)
		}
		if err := svc.Attempt(ctx, delivery.Args{AccountID: account, DeliveryID: id, Attempt: 1}); err != nil {
			t.Fatal(err)
		}
		return s.rc.Next(t)
	}
	d := deliver("during@example.com")
	if n := len(strings.Fields(d.Header.Get("webhook-signature"))); n != 2 {
		t.Errorf("during the overlap: %d signatures (%q), want 2", n, d.Header.Get("webhook-signature"))
	}
	if err := verifies(*s.sub.Secret, d); err != nil {
		t.Errorf("during the overlap, the old secret: %v", err)
	}
	if err := verifies(rotated.Secret, d); err != nil {
		t.Errorf("during the overlap, the new secret: %v", err)
	}

	clk.Add(subscription.RotationOverlap + time.Second)
	d = deliver("after@example.com")
	if n := len(strings.Fields(d.Header.Get("webhook-signature"))); n != 1 {
		t.Errorf("after 24 h: %d signatures, want 1", n)
	}
	if err := verifies(rotated.Secret, d); err != nil {
		t.Errorf("after 24 h, the new secret: %v", err)
	}
	if err := verifies(*s.sub.Secret, d); err == nil {
		t.Error("after 24 h, the old secret still verifies")
	}

	// another account's subscription, or none: as missing
	_, other := s.a.Account("other")
	if r := s.a.Do("POST", "/public/v1/webhooks/"+s.sub.SubscriptionId+"/secret", other, nil); r.Status != 404 ||
		r.Error(t).Code != api.ErrorCodeSubscriptionDoesNotExist {
		t.Errorf("another account rotating: %d %s", r.Status, r.Body)
	}
}

// A dump of the database (every column of every table) shows no webhook secret, client secret
// or API key in clear: not in the subscriptions, the accounts, nor the responses kept for
// Idempotency-Key retries.
func TestDumpShowsNoSecretInClear(t *testing.T) {
	t.Parallel()
	s := newSetup(t, true)
	ctx := context.Background()
	account, _ := s.a.Svc.Auth.AccountByName(ctx, "acme")
	s.addTags(t, "dump@example.com", "x")
	s.rc.Next(t) // the client secret exists once a delivery was signed
	// rotated, and a second subscription made, with Idempotency-Keys: their responses (the
	// secrets shown once) are kept for retries, and must be sealed there too
	r := s.a.Do("POST", "/public/v1/webhooks/"+s.sub.SubscriptionId+"/secret", s.key, nil, "Idempotency-Key", "rotate-1")
	var rotated, second api.WebhookSecret
	r.JSON(t, &rotated)
	s.a.Do("POST", "/public/v1/webhooks", s.key, map[string]any{"url": s.rc.URL + "?second", "eventType": "TagsRemoved"},
		"Idempotency-Key", "subscribe-2").JSON(t, &second)
	if rotated.Secret == "" || second.Secret == "" {
		t.Fatalf("rotate %+v, second subscription %+v", rotated, second)
	}
	client, err := s.a.Svc.Secrets.ClientSecret(ctx, account, false)
	if err != nil {
		t.Fatal(err)
	}
	dump, err := exec.Command(testkit.Cluster().Program("pg_dump"), "--data-only", s.a.DatabaseURL).Output()
	if err != nil {
		t.Fatalf("pg_dump: %v", err)
	}
	if !strings.Contains(string(dump), "dump@example.com") {
		t.Fatal("the dump does not hold the data: nothing was checked")
	}
	if strings.Contains(string(dump), "whsec_") {
		t.Error("the dump shows a signing secret's prefix: one is stored in clear")
	}
	for name, secret := range map[string]string{"the first secret": *s.sub.Secret, "the rotated secret": rotated.Secret,
		"the second subscription's secret": second.Secret, "the client secret": client, "the API key": s.key} {
		for _, part := range []string{secret, strings.TrimPrefix(secret, "whsec_")} {
			if strings.Contains(string(dump), part) {
				t.Errorf("the dump shows %s in clear", name)
			}
		}
	}
}

// A subscription an older contactd stored with its secret in clear is sealed at start-up,
// and its deliveries still verify with that secret.
func TestSecretsInClearAreSealed(t *testing.T) {
	t.Parallel()
	s := newSetup(t, false)
	ctx := context.Background()
	const old = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw1fu3bNzU"
	if _, err := s.a.Store.Pool.Exec(ctx, `UPDATE webhook_subscriptions SET secret = $2, secret_sealed = NULL
		WHERE subscription_id = $1`, s.sub.SubscriptionId, old); err != nil {
		t.Fatal(err)
	}
	s.a.StartWorkers()
	s.addTags(t, "clear@example.com", "x")
	if err := verifies(old, s.rc.Next(t)); err != nil {
		t.Errorf("a secret in clear, before sealing: %v", err)
	}
	n, err := s.a.Svc.Secrets.Reseal(ctx, true)
	if err != nil || n.Subscriptions != 1 {
		t.Fatalf("sealed %d (%v), want 1", n.Subscriptions, err)
	}
	var inClear *string
	if err := s.a.Store.Pool.QueryRow(ctx, `SELECT secret FROM webhook_subscriptions WHERE subscription_id = $1`, s.sub.SubscriptionId).Scan(&inClear); err != nil {
		t.Fatal(err)
	}
	if inClear != nil {
		t.Error("still in clear after sealing")
	}
	s.addTags(t, "sealed@example.com", "x")
	if err := verifies(old, s.rc.Next(t)); err != nil {
		t.Errorf("the same secret, sealed: %v", err)
	}
	if n, err := s.a.Svc.Secrets.Reseal(ctx, true); err != nil || n.Subscriptions != 0 {
		t.Errorf("sealing again: %d (%v), want nothing to do", n.Subscriptions, err)
	}
}
