package enrich

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestEmailStatus(t *testing.T) {
	r := NewFakeResolver()
	r.SetMX("example.org", "mx1.example.org", "mx2.example.org")
	r.SetHost("a-only.example", "192.0.2.7")
	r.SetMX("nullmx.example", ".")
	r.SetMX("mailinator.com", "mail.mailinator.com") // resolvable, but disposable
	r.FailTimes("flaky.example", 1)
	r.SetMX("flaky.example", "mx.flaky.example")
	cases := []struct {
		email, want string
		temporary   bool
	}{
		{"jane@example.org", StatusValid, false},
		{"Jane@EXAMPLE.ORG", StatusValid, false},
		{"ops@a-only.example", StatusValid, false},
		{"x@nullmx.example", StatusInvalid, false},
		{"x@no-such-domain.example", StatusInvalid, false},
		{"x@mailinator.com", StatusInvalid, false},
		{"x@sub.33mail.com", StatusInvalid, false}, // a wildcard entry
		{"not an email", StatusInvalid, false},
		{"x@flaky.example", StatusPending, true},
		{"x@flaky.example", StatusValid, false}, // the retry succeeds
	}
	for _, tc := range cases {
		got, err := EmailStatus(context.Background(), r, tc.email)
		if got != tc.want || errors.Is(err, ErrTemporary) != tc.temporary {
			t.Errorf("EmailStatus(%q) = %s, %v; want %s (temporary %v)", tc.email, got, err, tc.want, tc.temporary)
		}
	}
	if n := r.Calls("mailinator.com"); n != 0 {
		t.Errorf("a disposable domain was looked up %d times; the list answers first", n)
	}
}

func TestDisposable(t *testing.T) {
	for domain, want := range map[string]bool{
		"mailinator.com": true, "MAILINATOR.COM.": true, "guerrillamail.com": true, "yopmail.com": true,
		"a.b.33mail.com": true, "gmail.com": false, "example.org": false, "com": false, "": false,
	} {
		if got := Disposable(domain); got != want {
			t.Errorf("Disposable(%q) = %v, want %v", domain, got, want)
		}
	}
	if n := len(disposableList()); n < 100_000 {
		t.Errorf("disposable list has %d entries; the bundled list has over 120,000", n)
	}
}

func TestRetryDelay(t *testing.T) {
	base := 10 * time.Second
	want := []time.Duration{10 * time.Second, 40 * time.Second, 160 * time.Second, 640 * time.Second, 2560 * time.Second, time.Hour, time.Hour}
	for i, w := range want {
		if got := RetryDelay(base, i+1); got != w {
			t.Errorf("RetryDelay(attempt %d) = %s, want %s", i+1, got, w)
		}
	}
}
