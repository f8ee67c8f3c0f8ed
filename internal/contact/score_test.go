package contact

import (
	"testing"
	"time"
)

var scoreNow = time.Date(2026, 11, 21, 9, 30, 0, 0, time.UTC)

func forms(n int, ago time.Duration) Engagement {
	at := scoreNow.Add(-ago)
	return Engagement{FormSubmissions: n, LastFormSubmission: &at}
}

func TestLeadScoreValues(t *testing.T) {
	day := 24 * time.Hour
	clickAt := scoreNow
	cases := []struct {
		name string
		e    Engagement
		want int
	}{
		{"nothing", Engagement{}, 0},
		{"one form today", forms(1, 0), 28},
		{"one form 30 days ago", forms(1, 30*day), 15},
		{"sends only", Engagement{EmailSends: 50, LastEmailSend: &clickAt}, 0},
		{"5 forms and 10 clicks today", func() Engagement {
			e := forms(5, 0)
			e.EmailClicks, e.LastEmailClick = 10, &clickAt
			return e
		}(), 76},
		{"a flood", func() Engagement {
			e := forms(1_000_000, 0)
			e.EmailClicks, e.LastEmailClick = 1_000_000, &clickAt
			return e
		}(), 100},
	}
	for _, tc := range cases {
		if got := LeadScore(tc.e, scoreNow); got != tc.want {
			t.Errorf("%s: LeadScore = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// Adding any activity never lowers the score, and the engaging kinds raise it until it saturates.
func TestLeadScoreMonotoneInActivity(t *testing.T) {
	e := Engagement{}
	prev := LeadScore(e, scoreNow)
	for i := range 400 {
		e = applyActivity(e, activityTypes[i%len(activityTypes)], scoreNow.Add(-time.Duration(i)*time.Hour))
		got := LeadScore(e, scoreNow)
		if got < prev {
			t.Fatalf("activity %d (%s) lowered the score %d -> %d", i, activityTypes[i%len(activityTypes)], prev, got)
		}
		prev = got
	}
	if prev < 99 {
		t.Errorf("score after 400 activities = %d, want it saturated near 100", prev)
	}
	for _, typ := range []string{ActivityFormSubmission, ActivityEmailClick, ActivityDashboardClick, ActivityPostcardScan, ActivityDashboardView, ActivityEmailOpen} {
		before := forms(1, 0)
		if after := applyActivity(before, typ, scoreNow); LeadScore(after, scoreNow) <= LeadScore(before, scoreNow) {
			t.Errorf("%s did not raise the score", typ)
		}
	}
}

func TestLeadScoreDecaysWithAge(t *testing.T) {
	e := forms(8, 0)
	prev := LeadScore(e, scoreNow)
	for d := 1; d <= 365; d++ {
		got := LeadScore(e, scoreNow.Add(time.Duration(d)*24*time.Hour))
		if got > prev {
			t.Fatalf("day %d: score rose %d -> %d", d, prev, got)
		}
		prev = got
	}
	if prev != 0 {
		t.Errorf("a year later the score is %d, want 0", prev)
	}
	if a, b := LeadScore(forms(3, 0), scoreNow), LeadScore(forms(3, 60*24*time.Hour), scoreNow); b >= a {
		t.Errorf("older engagement scored %d, fresh %d", b, a)
	}
}

func TestLeadScoreBounded(t *testing.T) {
	times := []time.Duration{0, time.Hour, -time.Hour, 1000 * 24 * time.Hour}
	for _, n := range []int{0, 1, 7, 1 << 20, 1 << 30} {
		for _, ago := range times {
			at := scoreNow.Add(-ago)
			e := Engagement{FormSubmissions: n, LastFormSubmission: &at, EmailSends: n, LastEmailSend: &at,
				EmailOpens: n, LastEmailOpen: &at, EmailClicks: n, LastEmailClick: &at, DashboardViews: n,
				LastDashboardView: &at, DashboardClicks: n, LastDashboardClick: &at, PostcardScans: n, LastPostcardScan: &at}
			if s := LeadScore(e, scoreNow); s < 0 || s > 100 {
				t.Errorf("n=%d ago=%s: score %d out of 0..100", n, ago, s)
			}
		}
	}
}
