package delivery

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

func TestNextDelay(t *testing.T) {
	t.Parallel()
	low, mid, high := func() float64 { return 0 }, func() float64 { return 0.5 }, func() float64 { return 0.999999 }
	tests := []struct {
		attempt    int
		retryAfter time.Duration
		rnd        func() float64
		want       time.Duration
		more       bool
	}{
		{1, 0, mid, 5 * time.Second, true},
		{1, 0, low, 4 * time.Second, true},
		{1, 0, high, 6 * time.Second, true},
		{2, 0, mid, 5 * time.Minute, true},
		{3, 0, mid, 30 * time.Minute, true},
		{4, 0, mid, 2 * time.Hour, true},
		{5, 0, mid, 5 * time.Hour, true},
		{6, 0, mid, 10 * time.Hour, true},
		{7, 0, mid, 10 * time.Hour, true},
		{7, 0, low, 8 * time.Hour, true},
		{8, 0, mid, 0, false}, // the 8th attempt is the last
		{0, 0, mid, 0, false},
		{2, 90 * time.Second, mid, 90 * time.Second, true}, // Retry-After sooner than the step: honoured
		{2, time.Hour, mid, 5 * time.Minute, true},         // later than the step: capped
		{1, 10 * time.Second, high, 6 * time.Second, true}, // capped at the jittered step
		{8, time.Second, mid, 0, false},
	}
	for _, tc := range tests {
		got, more := NextDelay(tc.attempt, tc.retryAfter, tc.rnd)
		if got.Round(time.Millisecond) != tc.want || more != tc.more {
			t.Errorf("NextDelay(%d, %v) = %v, %v; want %v, %v", tc.attempt, tc.retryAfter, got, more, tc.want, tc.more)
		}
	}
	total := time.Duration(0)
	for _, s := range Steps {
		total += s
	}
	if MaxAttempts != 8 || total != 27*time.Hour+35*time.Minute+5*time.Second {
		t.Errorf("%d attempts over %v", MaxAttempts, total)
	}
}

func TestRetryAfterHeader(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	resp := func(code int, v string) *http.Response {
		return &http.Response{StatusCode: code, Header: http.Header{"Retry-After": {v}}}
	}
	for _, tc := range []struct {
		resp *http.Response
		want time.Duration
	}{
		{resp(503, "7"), 7 * time.Second},
		{resp(429, "120"), 2 * time.Minute},
		{resp(429, now.Add(time.Minute).Format(http.TimeFormat)), time.Minute},
		{resp(500, "7"), 0}, // only 429 and 503 carry a meaningful Retry-After
		{resp(503, "soon"), 0},
		{resp(503, "-3"), 0},
		{resp(503, now.Add(-time.Minute).Format(http.TimeFormat)), 0}, // a date past: no wait, not a negative one
	} {
		if got := retryAfter(tc.resp, now); got != tc.want {
			t.Errorf("%d %q: %v, want %v", tc.resp.StatusCode, tc.resp.Header.Get("Retry-After"), got, tc.want)
		}
	}
}

// Our signature verifies with the Standard Webhooks reference library, not with our code.
func TestSignVerifiesWithStandardWebhooks(t *testing.T) {
	t.Parallel()
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw1fu3bNzUbJY="
	body := []byte(`{"events":[{"eventId":"e1"}]}`)
	ts := time.Now().Unix()
	sig, err := Sign(secret, "e1", ts, body)
	if err != nil {
		t.Fatal(err)
	}
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set("webhook-id", "e1")
	h.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	h.Set("webhook-signature", sig)
	if err := wh.Verify(body, h); err != nil {
		t.Errorf("reference library rejects our signature: %v", err)
	}
	h.Set("webhook-id", "e2")
	if err := wh.Verify(body, h); err == nil {
		t.Error("a signature for another id verified")
	}
	// a secret that is not base64, even after a decodable start, or that is empty, signs nothing
	for _, bad := range []string{"whsec_!!!", "whsec_QUJD!!!!", "whsec_", ""} {
		if _, err := Sign(bad, "e1", ts, body); err == nil {
			t.Errorf("the malformed secret %q signed", bad)
		}
	}
}
