package contact

import (
	"math"
	"time"
)

// Lead score parameters; docs/api.md explains the formula.
const (
	// ScoreHalfLife is how long it takes an activity type's contribution to halve.
	ScoreHalfLife = 30 * 24 * time.Hour
	// scoreScale is the sum of points at which the score reaches 63 (1 - 1/e).
	scoreScale = 30.0
)

// scoreWeights are the points of a first activity of each kind, before decay. A send is
// something done to the contact, not by them: it is worth nothing.
var scoreWeights = []struct {
	weight float64
	count  func(Engagement) (int, *time.Time)
}{
	{10, func(e Engagement) (int, *time.Time) { return e.FormSubmissions, e.LastFormSubmission }},
	// an AI assistant handing the conversation to a person: the contact asked for one.
	{8, func(e Engagement) (int, *time.Time) { return e.AIHandoffs, e.LastAIHandoff }},
	{6, func(e Engagement) (int, *time.Time) { return e.PostcardScans, e.LastPostcardScan }},
	{5, func(e Engagement) (int, *time.Time) { return e.EmailClicks, e.LastEmailClick }},
	{4, func(e Engagement) (int, *time.Time) { return e.DashboardClicks, e.LastDashboardClick }},
	{2, func(e Engagement) (int, *time.Time) { return e.DashboardViews, e.LastDashboardView }},
	{1, func(e Engagement) (int, *time.Time) { return e.EmailOpens, e.LastEmailOpen }},
	{0, func(e Engagement) (int, *time.Time) { return e.EmailSends, e.LastEmailSend }},
}

// LeadScore is 0..100 from the engagement at time now:
//
//	points = Σ weight(type) × log2(1 + count(type)) × 0.5^(age(type) / 30 days)
//	score  = round(100 × (1 − e^(−points / 30)))
//
// where age is the time since the type's last activity. Repeats count with diminishing
// returns (log2), old engagement fades (half-life 30 days), and the score saturates below 100.
func LeadScore(e Engagement, now time.Time) int {
	points := 0.0
	for _, w := range scoreWeights {
		n, last := w.count(e)
		if n <= 0 || w.weight == 0 {
			continue
		}
		decay := 1.0
		if last != nil && now.After(*last) {
			decay = math.Exp2(-float64(now.Sub(*last)) / float64(ScoreHalfLife))
		}
		points += w.weight * math.Log2(1+float64(n)) * decay
	}
	score := int(math.Round(100 * (1 - math.Exp(-points/scoreScale))))
	return max(0, min(100, score))
}
