// Package enrich is the asynchronous enrichment of contacts: after a create, an email change
// or a new property the contact is due (contacts.enrich_due_at, set by the change's own
// statement); workers claim due contacts in batches, decide the email's status from DNS and
// bring the properties' addresses to the current standard form, then emit ContactEnriched
// with what changed. DNS stays off the request path and out of every transaction.
package enrich

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/address"
	"github.com/contactd/contactd/internal/event"
	"github.com/contactd/contactd/internal/platform/queue"
	"github.com/contactd/contactd/internal/platform/store"
)

// MaxAttempts bounds the tries of a check whose DNS keeps failing; the status then stays
// Pending until the next email change.
const MaxAttempts = 10

// Options configures enrichment.
type Options struct {
	Resolver Resolver
	// RetryBase is the first retry delay after a temporary DNS failure; each retry waits 4x
	// longer, up to an hour.
	RetryBase time.Duration
	// PollEvery is how often an idle worker looks for due contacts (default 500ms).
	PollEvery time.Duration
	// Batch is how many due contacts a worker claims, and enriches concurrently, at once
	// (default 64).
	Batch int
	// Lease is how long a claimed contact is the worker's (default 2 minutes): a worker that
	// dies leaves it due again after that.
	Lease time.Duration
	Now   func() time.Time
	Log   *slog.Logger
}

// Service runs enrichment workers.
type Service struct {
	store   *store.Store
	opt     Options
	events  *event.Emitter
	domains *domainVerdicts

	queue *queue.Queue // one slot: a batch at a time

	segments Segments
}

// Segments keeps the segments of the contacts an enrichment changes (the contact package's
// Service).
type Segments interface {
	SegmentsQuiet(ctx context.Context, account uuid.UUID) (version int64, quiet bool, err error)
	KeepSegments(ctx context.Context, tx store.Tx, account uuid.UUID, ids ...uuid.UUID) error
	ForgetSegments(account uuid.UUID)
}

// KeepSegments has enrichment keep the segments of the contacts it changes (nil: none): set
// once, before the workers start.
func (s *Service) KeepSegments(sg Segments) { s.segments = sg }

// New returns the service; events receives ContactEnriched.
func New(st *store.Store, events *event.Emitter, opt Options) *Service {
	if opt.RetryBase <= 0 {
		opt.RetryBase = 10 * time.Second
	}
	if opt.PollEvery <= 0 {
		opt.PollEvery = 500 * time.Millisecond
	}
	if opt.Batch <= 0 {
		opt.Batch = 64
	}
	if opt.Lease <= 0 {
		opt.Lease = 2 * time.Minute
	}
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	s := &Service{store: st, events: events, opt: opt, domains: newDomainVerdicts(opt.Now)}
	s.queue = queue.New(queue.Options{Name: "enrichment", Slots: 1, PollEvery: opt.PollEvery, Log: opt.Log}, s.claim)
	return s
}

// UseResolver replaces the DNS resolver and the first retry delay; for tests, before the
// worker starts.
func (s *Service) UseResolver(r Resolver, retryBase time.Duration) {
	s.opt.Resolver, s.opt.RetryBase = r, retryBase
}

// KnownStatus is the email's status when deciding it needs no DNS: an invalid address, a
// disposable domain, or a domain this process looked up within DomainVerdictTTL. A create
// applies it itself (contact.Verdicts), with the ContactEnriched event this service would
// emit, and is never due here.
func (s *Service) KnownStatus(email string) (string, bool) { return s.domains.remembered(email) }

// UsePolling replaces how often an idle worker looks for due contacts; for tests, before the
// worker starts.
func (s *Service) UsePolling(every time.Duration) { s.queue.UsePolling(every) }

// Start runs the worker until Stop. Workers in several processes share the due contacts.
func (s *Service) Start() { s.queue.Start() }

// Stop lets the batch in progress finish within ctx, then cancels it; contacts it did not
// finish are due again when their lease ends.
func (s *Service) Stop(ctx context.Context) error { return s.queue.Stop(ctx) }

// RunBatch takes up to Batch due contacts and enriches them, as one turn of the worker does;
// it returns how many it took.
func (s *Service) RunBatch(ctx context.Context) (int, error) {
	taken, leased, err := s.claimBatch(ctx)
	if err != nil || len(leased) == 0 {
		return taken, err
	}
	return taken, s.checkLeased(ctx, leased)
}

// claim is the queue's claim: one batch, whose leased contacts are one work item; more is due
// when the batch was full.
func (s *Service) claim(ctx context.Context, _ int) ([]queue.Work, bool, error) {
	taken, leased, err := s.claimBatch(ctx)
	if err != nil || len(leased) == 0 {
		return nil, taken == s.opt.Batch, err
	}
	work := func(ctx context.Context) {
		if err := s.checkLeased(ctx, leased); err != nil && ctx.Err() == nil {
			s.opt.Log.Warn("enrichment: finishing a batch failed", slog.Any("error", err))
		}
	}
	return []queue.Work{work}, taken == s.opt.Batch, nil
}

// claimBatch locks up to Batch due contacts and returns how many it took. A contact whose
// check needs no DNS (its domain's verdict is remembered, or its email is not Pending) and
// whose enrichment emits nothing is finished in the transaction that locked it: one write.
// The others are leased and returned, to be checked outside any transaction.
func (s *Service) claimBatch(ctx context.Context) (int, []db.EnrichLockDueRow, error) {
	now := s.opt.Now()
	lease := now.Add(s.opt.Lease).Truncate(time.Microsecond) // as PostgreSQL stores it
	var taken int
	var leased []db.EnrichLockDueRow
	err := s.store.InTx(ctx, func(tx store.Tx) error {
		due, err := tx.EnrichLockDue(ctx, db.EnrichLockDueParams{Now: now, Max: int32(s.opt.Batch), ParserVersion: address.Version})
		if err != nil || len(due) == 0 {
			return err
		}
		taken = len(due)
		var ready []checked
		for _, c := range due {
			if out, ok := s.checkNow(ctx, c); ok {
				ready = append(ready, out)
			} else {
				leased = append(leased, c)
			}
		}
		if len(leased) > 0 {
			p := db.EnrichLeaseParams{LeaseUntil: lease}
			for i := range leased {
				leased[i].HeldDueAt, leased[i].EnrichAttempts = lease, leased[i].EnrichAttempts+1
				p.AccountIds, p.ContactIds = append(p.AccountIds, leased[i].AccountID), append(p.ContactIds, leased[i].ContactID)
			}
			if err := tx.EnrichLease(ctx, p); err != nil {
				return err
			}
		}
		_, err = s.finishQuiet(ctx, tx.Queries, ready) // one left for a moved audience is due again
		return err
	})
	if err != nil {
		return taken, nil, err
	}
	return taken, leased, nil
}

// checkLeased checks leased contacts concurrently, outside any transaction, and finishes each
// with its events, or together when they have none.
func (s *Service) checkLeased(ctx context.Context, leased []db.EnrichLockDueRow) error {
	results := make([]checked, len(leased))
	var wg sync.WaitGroup
	for i, c := range leased {
		wg.Go(func() { results[i] = s.check(ctx, c) })
	}
	wg.Wait()
	var quiet []checked
	for _, c := range results {
		switch {
		case c.err != nil:
			wg.Go(func() { s.failed(ctx, c) })
		case s.emits(ctx, &c):
			wg.Go(func() { s.finishLoud(ctx, c) })
		default:
			quiet = append(quiet, c)
		}
	}
	var stale []checked
	err := s.store.Do(ctx, func(q *db.Queries) (err error) {
		stale, err = s.finishQuiet(ctx, q, quiet)
		return err
	})
	for _, c := range stale { // its account subscribed meanwhile: its event may have deliveries
		wg.Go(func() { s.finishLoud(ctx, c) })
	}
	wg.Wait()
	return err
}

// finishLoud is finishWithEvents, its failure logged.
func (s *Service) finishLoud(ctx context.Context, c checked) {
	if err := s.finishWithEvents(ctx, c); err != nil && ctx.Err() == nil {
		s.opt.Log.Warn("enrichment failed", slog.String("contact_id", c.ContactID.String()), slog.Any("error", err))
	}
}

// checked is a contact taken from the queue with what enriching it found.
type checked struct {
	db.EnrichLockDueRow
	verdict        string // the email's status, when it was Pending; "" otherwise
	restandardised []claimedProperty
	err            error
	// audience is the version of the account's subscriptions at which the fan-out found none
	// for its event (finishQuiet)
	audience int64
	// segments is the account's segments version, as a bulk finish checks it (-1: none kept).
	segments int64
}

// claimedProperty is an active property as EnrichLockDue returns it.
type claimedProperty struct {
	PropertyID uuid.UUID `json:"propertyId"`
	RawAddress string    `json:"rawAddress"`
	address.Address
}

// check decides the contact's email status (DNS, outside any transaction) and the
// properties whose standard form changed.
func (s *Service) check(ctx context.Context, c db.EnrichLockDueRow) checked {
	out := checked{EnrichLockDueRow: c}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if c.EmailStatus == StatusPending {
		if out.verdict, out.err = s.domains.emailStatus(ctx, s.opt.Resolver, c.Email); out.err != nil {
			return out
		}
	}
	out.restandardised, out.err = restandardised(c.Properties)
	return out
}

// checkNow is check when it needs no DNS and the outcome emits nothing; false otherwise.
func (s *Service) checkNow(ctx context.Context, c db.EnrichLockDueRow) (checked, bool) {
	out := checked{EnrichLockDueRow: c}
	if c.EmailStatus == StatusPending {
		verdict, ok := s.domains.remembered(c.Email)
		if !ok {
			return out, false
		}
		out.verdict = verdict
	}
	out.restandardised, out.err = restandardised(c.Properties)
	return out, out.err == nil && !s.emits(ctx, &out)
}

// restandardised is the properties whose standard form changed since they were stored.
func restandardised(claimed []byte) ([]claimedProperty, error) {
	var props []claimedProperty
	if err := json.Unmarshal(claimed, &props); err != nil {
		return nil, err
	}
	var changed []claimedProperty
	for _, p := range props {
		if std, err := address.Parse(p.RawAddress); err == nil && std != p.Address {
			changed = append(changed, claimedProperty{PropertyID: p.PropertyID, Address: std})
		}
	}
	return changed, nil
}

// emits reports whether finishing c needs a transaction of its own: it restandardises an
// address, or the fan-out may plan deliveries of its ContactEnriched event (else c notes at
// which version of the account's subscriptions it found none).
func (s *Service) emits(ctx context.Context, c *checked) bool {
	if len(c.restandardised) > 0 {
		return true
	}
	if c.verdict == "" {
		return false
	}
	c.segments = -1
	if s.segments != nil {
		version, quiet, err := s.segments.SegmentsQuiet(ctx, c.AccountID)
		if err != nil || !quiet {
			return true
		}
		c.segments = version
	}
	aud, err := s.events.Audience(ctx, nil, c.AccountID)
	if err != nil || aud.Wants(event.ContactEnriched) {
		return true
	}
	c.audience = aud.Version
	return false
}

// finishQuiet ends the holds on contacts whose enrichment queues no delivery, in one
// statement that records their ContactEnriched events (the decided email statuses). It
// leaves alone, and returns, those whose account's subscriptions moved on since the fan-out
// found none for their events (its audience read again).
func (s *Service) finishQuiet(ctx context.Context, q *db.Queries, cs []checked) ([]checked, error) {
	if len(cs) == 0 {
		return nil, nil
	}
	now := s.opt.Now()
	p := db.EnrichFinishManyParams{Now: now, ParserVersion: address.Version}
	for _, c := range cs {
		p.AccountIds, p.ContactIds = append(p.AccountIds, c.AccountID), append(p.ContactIds, c.ContactID)
		p.Verdicts, p.HeldDueAts = append(p.Verdicts, c.verdict), append(p.HeldDueAts, c.HeldDueAt)
		ev := event.Prepared{} // ID uuid.Nil: no event
		if c.verdict != "" {
			var err error
			if ev, err = event.Prepare(ctx, event.Event{Type: event.ContactEnriched, ContactID: c.ContactID,
				Contact: c.contactInfo(), Info: c.verdictInfo(), At: now}); err != nil {
				return nil, err
			}
		}
		p.EventIds, p.EventPayloads = append(p.EventIds, ev.ID), append(p.EventPayloads, string(ev.Payload))
		p.SubscriptionsVersions, p.SegmentsVersions = append(p.SubscriptionsVersions, c.audience), append(p.SegmentsVersions, c.segments)
	}
	staleIDs, err := q.EnrichFinishMany(ctx, p)
	if err != nil || len(staleIDs) == 0 {
		return nil, err
	}
	var stale []checked
	for _, c := range cs {
		if slices.Contains(staleIDs, c.ContactID) {
			stale = append(stale, c)
			if _, err := s.events.Reload(ctx, nil, c.AccountID); err != nil {
				return nil, err
			}
			if s.segments != nil {
				s.segments.ForgetSegments(c.AccountID)
			}
		}
	}
	return stale, nil
}

// contactInfo identifies the contact in its events.
func (c checked) contactInfo() event.ContactInfo {
	ci := event.ContactInfo{ContactID: c.ContactID.String(), EmailID: c.Email}
	if c.AssignedUserEmailID != nil {
		ci.AssignedUserEmailID = *c.AssignedUserEmailID
	}
	return ci
}

// verdictInfo is ContactEnriched's detail for the email verdict (none when there is none).
func (c checked) verdictInfo() event.ContactEnrichedInfo {
	info := event.ContactEnrichedInfo{ChangedFields: []string{}}
	if c.verdict != "" {
		info.ChangedFields = append(info.ChangedFields, "emailStatus")
		info.EmailStatus, info.PreviousEmailStatus = c.verdict, StatusPending
	}
	return info
}

// finishWithEvents ends the lease with the changes and their events, in one transaction.
func (s *Service) finishWithEvents(ctx context.Context, c checked) error {
	now := s.opt.Now()
	return s.store.InTx(ctx, func(tx store.Tx) error {
		n, err := tx.EnrichFinish(ctx, db.EnrichFinishParams{AccountID: c.AccountID, ContactID: c.ContactID,
			HeldDueAt: c.HeldDueAt, Verdict: c.verdict, Now: now, ParserVersion: address.Version})
		if err != nil || n == 0 {
			return err // n == 0: no longer ours (the email changed since the claim)
		}
		if err := s.applyAndEmit(ctx, tx, c, now); err != nil || s.segments == nil {
			return err
		}
		return s.segments.KeepSegments(ctx, tx, c.AccountID, c.ContactID)
	})
}

// failed ends the lease of a check that failed: a temporary DNS failure is retried on its
// schedule; anything else waits for the lease to end.
func (s *Service) failed(ctx context.Context, c checked) {
	if !errors.Is(c.err, ErrTemporary) {
		if ctx.Err() == nil {
			s.opt.Log.Warn("enrichment failed", slog.String("contact_id", c.ContactID.String()), slog.Any("error", c.err))
		}
		return
	}
	if err := s.retry(ctx, c.EnrichLockDueRow, c.err); err != nil && ctx.Err() == nil {
		s.opt.Log.Warn("enrichment: scheduling the retry failed", slog.String("contact_id", c.ContactID.String()), slog.Any("error", err))
	}
}

// retry ends the lease after a temporary DNS failure: due again later, or given up on.
func (s *Service) retry(ctx context.Context, c db.EnrichLockDueRow, cause error) error {
	p := db.EnrichRetryParams{AccountID: c.AccountID, ContactID: c.ContactID, LeaseUntil: c.HeldDueAt}
	if c.EnrichAttempts < MaxAttempts {
		next := s.opt.Now().Add(RetryDelay(s.opt.RetryBase, int(c.EnrichAttempts)))
		p.DueAt = &next
	}
	s.opt.Log.Info("enrichment will retry", slog.String("contact_id", c.ContactID.String()),
		slog.Int("attempt", int(c.EnrichAttempts)), slog.Bool("giving_up", p.DueAt == nil), slog.Any("error", cause))
	return s.store.Do(ctx, func(q *db.Queries) error { return q.EnrichRetry(ctx, p) })
}

// RetryDelay is the wait after the attempt-th failed check: base, 4x base, 16x base, ...
// capped at an hour.
func RetryDelay(base time.Duration, attempt int) time.Duration {
	d := base
	for i := 1; i < attempt && d < time.Hour; i++ {
		d *= 4
	}
	return min(d, time.Hour)
}

// applyAndEmit stores the new standard forms and emits ContactEnriched: the email verdict
// with the first changed address, one more event per further changed address.
func (s *Service) applyAndEmit(ctx context.Context, tx store.Tx, c checked, now time.Time) error {
	ci, info := c.contactInfo(), c.verdictInfo()
	emit := func(ci event.ContactInfo, info event.ContactEnrichedInfo) error {
		if len(info.ChangedFields) == 0 {
			return nil
		}
		return s.events.Emit(ctx, tx, c.AccountID, event.Event{Type: event.ContactEnriched,
			ContactID: c.ContactID, Contact: ci, Info: info, At: now})
	}
	refresh := false
	for _, p := range c.restandardised {
		changed, err := standardise(ctx, tx, c.AccountID, p)
		if err != nil {
			return err
		}
		if !changed {
			continue
		}
		refresh = true
		withAddress, pci := info, ci
		withAddress.ChangedFields = append(withAddress.ChangedFields, "address")
		withAddress.Address = &event.Address{AptOrUnitNumber: p.AptOrUnitNumber, StreetAddress: p.StreetAddress,
			City: p.City, County: p.County, State: p.State, Zip: p.Zip}
		pci.PropertyID = p.PropertyID.String()
		if err := emit(pci, withAddress); err != nil {
			return err
		}
		info = event.ContactEnrichedInfo{ChangedFields: []string{}} // the verdict went with the first
	}
	if refresh {
		// EnrichFinish, an earlier statement, holds the contact's lock (see ContactRefreshProperties).
		if _, err := tx.ContactRefreshProperties(ctx, db.ContactRefreshPropertiesParams{AccountID: c.AccountID, ContactID: c.ContactID}); err != nil {
			return err
		}
	}
	return emit(ci, info)
}

// standardise stores a property's new standard form; false when it was archived since or the
// new form would collide with another of the contact's active properties.
func standardise(ctx context.Context, tx store.Tx, accountID uuid.UUID, p claimedProperty) (bool, error) {
	std := p.Address
	n, err := tx.PropertyUpdateAddress(ctx, db.PropertyUpdateAddressParams{AccountID: accountID, PropertyID: p.PropertyID,
		AptOrUnitNumber: std.AptOrUnitNumber, StreetAddress: std.StreetAddress, City: std.City,
		County: std.County, State: std.State, Zip: std.Zip, Normalized: std.Normalized()})
	return n > 0, err
}
