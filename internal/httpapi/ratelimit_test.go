package httpapi_test

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/config"
	"github.com/contactd/contactd/internal/testkit"
)

func TestRateLimit(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t, func(c *config.Config) { c.RateReadsPer10s, c.RateWritesPer10s = 100, 50 })
	accountID, key := a.Account("acme")
	other, err := a.Svc.Auth.CreateKey(context.Background(), accountID, "other")
	if err != nil {
		t.Fatal(err)
	}
	id := createContact(t, a, key, map[string]any{"email": "rl@example.com"}).Contact.ContactId // write 1
	var firstDone time.Time                                                                     // the oldest read of the window was made by then
	for i := 1; i <= 100; i++ {
		r := a.Do("GET", "/public/v1/contact?contactId="+id, key, nil)
		if i == 1 {
			firstDone = time.Now()
		}
		reset, _ := strconv.Atoi(r.Header.Get("RateLimit-Reset"))
		if r.Status != 200 || r.Header.Get("X-RateLimit-Limit-10") != "100" || r.Header.Get("X-RateLimit-Remaining-10") != strconv.Itoa(100-i) ||
			reset < 1 || reset > 10 {
			t.Fatalf("read %d: %d %v", i, r.Status, r.Header)
		}
	}
	sent := time.Now() // the 101st read is decided after this
	r := a.Do("GET", "/public/v1/contact?contactId="+id, key, nil)
	retry, _ := strconv.Atoi(r.Header.Get("Retry-After"))
	if e := r.Error(t); r.Status != 429 || e.Code != api.ErrorCodeTooManyRequests || r.Header.Get("X-RateLimit-Remaining-10") != "0" ||
		r.Header.Get("RateLimit-Reset") != r.Header.Get("Retry-After") {
		t.Fatalf("101st read: %d %v %s", r.Status, r.Header, r.Body)
	}
	// the oldest read leaves the window 10 s after it was made: at most 10 s less the time
	// between the first read's answer and the 101st read's sending, rounded up
	if wantMax := int(math.Ceil((10*time.Second - sent.Sub(firstDone)).Seconds())); retry < 1 || retry > wantMax {
		t.Errorf("Retry-After = %d, want 1..%d", retry, wantMax)
	}
	if r := a.Do("GET", "/public/v1/contact?contactId="+id, other, nil); r.Status != 200 || r.Header.Get("X-RateLimit-Remaining-10") != "99" {
		t.Errorf("another key: %d %v", r.Status, r.Header)
	}
	for i := 2; i <= 50; i++ {
		if r := a.Do("POST", "/public/v1/contact/"+id+"/tags", key, map[string]any{"tags": []string{"t"}}); r.Status != 200 {
			t.Fatalf("write %d: %d %s", i, r.Status, r.Body)
		}
	}
	if r := a.Do("POST", "/public/v1/contact/"+id+"/tags", key, map[string]any{"tags": []string{"t"}}); r.Status != 429 || r.Header.Get("X-RateLimit-Limit-10") != "50" || r.Header.Get("Retry-After") == "" {
		t.Errorf("51st write: %d %v", r.Status, r.Header)
	}
	// the window slides: once Retry-After has passed, reads are admitted again (the
	// limiter's clock moved on, not waited out)
	a.RateClock.Advance(time.Duration(retry) * time.Second)
	if r := a.Do("GET", "/public/v1/contact?contactId="+id, key, nil); r.Status != 200 {
		t.Errorf("after Retry-After: %d %v", r.Status, r.Header)
	}
}

func TestRateLimitPerAccountDay(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t, func(c *config.Config) { c.RateAccountPerDay = 3 })
	accountID, key := a.Account("acme")
	second, err := a.Svc.Auth.CreateKey(context.Background(), accountID, "second")
	if err != nil {
		t.Fatal(err)
	}
	_, otherKey := a.Account("other")
	for i, k := range []string{key, second, key} {
		r := a.Do("GET", "/public/v1/webhooks", k, nil)
		if r.Status != 200 || r.Header.Get("X-RateLimit-Limit-Day") != "3" || r.Header.Get("X-RateLimit-Remaining-Day") != strconv.Itoa(2-i) ||
			r.Header.Get("X-RateLimit-Limit-10") != "" {
			t.Fatalf("request %d: %d %v", i+1, r.Status, r.Header)
		}
	}
	r := a.Do("GET", "/public/v1/webhooks", second, nil)
	if retry, _ := strconv.Atoi(r.Header.Get("Retry-After")); r.Status != 429 || retry < 1 || retry > 86400 {
		t.Errorf("4th request of the account: %d %v", r.Status, r.Header)
	}
	if r := a.Do("GET", "/public/v1/webhooks", otherKey, nil); r.Status != 200 {
		t.Errorf("another account: %d", r.Status)
	}
}

// With CONTACTD_REDIS_URL the API's limits are the shared ones, with the same headers.
func TestRateLimitSharedThroughRedis(t *testing.T) {
	t.Parallel()
	r := testkit.StartRedis(t)
	a := testkit.NewAPI(t, func(c *config.Config) {
		c.RedisURL, c.RateWritesPer10s, c.RateAccountPerDay = r.URL, 3, 1000
		c.RedisTimeout = testkit.Patience // answers from a busy machine's Redis are not fallbacks
	})
	_, key := a.Account("acme")
	for i := range 3 {
		if r := a.Do("POST", "/public/v1/contact", key, map[string]any{"email": fmt.Sprintf("r%d@example.com", i)}); r.Status != 200 ||
			r.Header.Get("X-RateLimit-Remaining-10") != strconv.Itoa(2-i) || r.Header.Get("X-RateLimit-Remaining-Day") != strconv.Itoa(999-i) {
			t.Fatalf("write %d: %d %v", i+1, r.Status, r.Header)
		}
	}
	if r := a.Do("POST", "/public/v1/contact", key, map[string]any{"email": "r4@example.com"}); r.Status != 429 || r.Header.Get("Retry-After") == "" ||
		r.Header.Get("RateLimit-Reset") == "" {
		t.Errorf("the 4th write: %d %v", r.Status, r.Header)
	}
	r.Stop() // Redis away: the process limits alone, and counts it
	if r := a.Do("POST", "/public/v1/contact", key, map[string]any{"email": "r5@example.com"}); r.Status != 200 {
		t.Errorf("with Redis gone: %d %s", r.Status, r.Body)
	}
	if m := string(a.Do("GET", "/metrics", "", nil).Body); !strings.Contains(m, "contactd_ratelimit_fallbacks_total 1") {
		t.Errorf("fallback not counted in /metrics")
	}
}
