// Package enrich is the asynchronous enrichment of contacts: after a create, an email change
// or a new property, a River job decides the email's status from DNS and brings the
// property's address to the current standard form, then emits ContactEnriched with what
// changed. DNS stays off the request path and out of every transaction.
package enrich

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/address"
	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/contact"
	"github.com/contactd/contactd/internal/store"
	"github.com/contactd/contactd/internal/webhook"
)

// Args is the enrichment job of one contact and, optionally, one of its properties.
type Args struct {
	AccountID  uuid.UUID  `json:"account_id"`
	ContactID  uuid.UUID  `json:"contact_id"`
	PropertyID *uuid.UUID `json:"property_id,omitempty"`
}

// Kind names the job for River.
func (Args) Kind() string { return "contact_enrich" }

// MaxAttempts bounds the retries of a check whose DNS keeps failing; the status then stays
// Pending until the next email change.
const MaxAttempts = 10

// InsertOpts puts enrichment on the default queue, apart from webhook deliveries.
func (Args) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: river.QueueDefault, MaxAttempts: MaxAttempts}
}

// Inserter schedules jobs inside a transaction (River's client is one).
type Inserter interface {
	InsertTx(ctx context.Context, tx pgx.Tx, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error)
}

// Options configures enrichment.
type Options struct {
	Resolver Resolver
	// RetryBase is the first retry delay after a temporary DNS failure; each retry waits 4x
	// longer, up to an hour.
	RetryBase time.Duration
	Now       func() time.Time
	Log       *slog.Logger
}

// Service enqueues and runs enrichment jobs.
type Service struct {
	store  *store.Store
	opt    Options
	jobs   Inserter
	events *webhook.Emitter
}

// New returns the service; Bind must give it the job client and the emitter before use.
func New(st *store.Store, opt Options) *Service {
	if opt.RetryBase <= 0 {
		opt.RetryBase = 10 * time.Second
	}
	return &Service{store: st, opt: opt}
}

// Bind connects the service to the job client its worker runs on and to the event emitter
// (both are built after the workers are registered).
func (s *Service) Bind(jobs Inserter, events *webhook.Emitter) { s.jobs, s.events = jobs, events }

// UseResolver replaces the DNS resolver and the first retry delay; for tests, before any
// job runs.
func (s *Service) UseResolver(r Resolver, retryBase time.Duration) {
	s.opt.Resolver, s.opt.RetryBase = r, retryBase
}

// Register adds the enrichment worker to a job client's workers.
func (s *Service) Register(w *river.Workers) { river.AddWorker(w, &worker{s: s}) }

// EnqueueEnrichment implements contact.Enricher: the job is inserted in the change's
// transaction, so it exists exactly when the change does.
func (s *Service) EnqueueEnrichment(ctx context.Context, tx store.Tx, accountID, contactID uuid.UUID, propertyID *uuid.UUID) error {
	_, err := s.jobs.InsertTx(ctx, tx.Raw, Args{AccountID: accountID, ContactID: contactID, PropertyID: propertyID}, nil)
	return err
}

type worker struct {
	river.WorkerDefaults[Args]
	s *Service
}

func (w *worker) Work(ctx context.Context, job *river.Job[Args]) error {
	err := w.s.Enrich(ctx, job.Args)
	if errors.Is(err, ErrTemporary) && w.s.opt.Log != nil {
		w.s.opt.Log.Info("enrichment will retry", slog.String("contact_id", job.Args.ContactID.String()),
			slog.Int("attempt", job.Attempt), slog.Any("error", err))
	}
	return err
}

func (w *worker) Timeout(*river.Job[Args]) time.Duration { return 30 * time.Second }

func (w *worker) NextRetry(job *river.Job[Args]) time.Time {
	return time.Now().Add(RetryDelay(w.s.opt.RetryBase, job.Attempt))
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

// Enrich runs one enrichment. The DNS check happens before the transaction; the result is
// applied only if the contact still has the email that was checked.
func (s *Service) Enrich(ctx context.Context, a Args) error {
	var email, status string
	err := s.store.Read(ctx, func(q *db.Queries) error {
		row, err := q.ContactGetByID(ctx, db.ContactGetByIDParams{AccountID: a.AccountID, ContactID: a.ContactID})
		email, status = row.Contact.Email, row.Contact.EmailStatus
		return err
	})
	if errors.Is(err, apperr.ErrNoRows) {
		return nil // deleted since: nothing to enrich
	} else if err != nil {
		return err
	}
	verdict := ""
	if status == StatusPending {
		if verdict, err = EmailStatus(ctx, s.opt.Resolver, email); err != nil {
			return err
		}
	}
	return s.store.InTx(ctx, func(tx store.Tx) error {
		return s.apply(ctx, tx, a, email, verdict)
	})
}

func (s *Service) apply(ctx context.Context, tx store.Tx, a Args, checked, verdict string) error {
	row, err := tx.ContactLock(ctx, db.ContactLockParams{AccountID: a.AccountID, ContactID: a.ContactID})
	if errors.Is(store.Translate(err), apperr.ErrNoRows) {
		return nil
	} else if err != nil {
		return err
	}
	now := s.opt.Now()
	info := webhook.ContactEnrichedInfo{ChangedFields: []string{}}
	if verdict != "" && row.EmailStatus == StatusPending && contact.EmailKey(row.Email) == contact.EmailKey(checked) {
		if err := tx.ContactSetEmailStatus(ctx, db.ContactSetEmailStatusParams{AccountID: a.AccountID,
			ContactID: a.ContactID, EmailStatus: verdict, UpdatedAt: now}); err != nil {
			return err
		}
		info.ChangedFields = append(info.ChangedFields, "emailStatus")
		info.EmailStatus, info.PreviousEmailStatus = verdict, row.EmailStatus
	}
	ci := webhook.ContactInfo{ContactID: a.ContactID.String(), EmailID: row.Email}
	if row.AssignedUserEmailID != nil {
		ci.AssignedUserEmailID = *row.AssignedUserEmailID
	}
	if a.PropertyID != nil {
		changed, err := standardise(ctx, tx, a.AccountID, *a.PropertyID)
		if err != nil {
			return err
		}
		if changed != nil {
			info.ChangedFields = append(info.ChangedFields, "address")
			info.Address = changed
			ci.PropertyID = a.PropertyID.String()
		}
	}
	if len(info.ChangedFields) == 0 {
		return nil
	}
	return s.events.Emit(ctx, tx, a.AccountID, webhook.Event{Type: webhook.ContactEnriched,
		ContactID: a.ContactID, Contact: ci, Info: info, At: now})
}

// standardise re-parses the property's original text with the current parser and ZIP table
// and stores the result when it differs; it returns the new address, or nil when unchanged.
func standardise(ctx context.Context, tx store.Tx, accountID, propertyID uuid.UUID) (*webhook.Address, error) {
	p, err := tx.PropertyGet(ctx, db.PropertyGetParams{AccountID: accountID, PropertyID: propertyID})
	if errors.Is(store.Translate(err), apperr.ErrNoRows) {
		return nil, nil // archived or deleted since
	} else if err != nil {
		return nil, err
	}
	std, err := address.Parse(p.RawAddress)
	if err != nil {
		return nil, nil // the parser no longer understands it: keep what was stored
	}
	stored := address.Address{AptOrUnitNumber: p.AptOrUnitNumber, StreetAddress: p.StreetAddress,
		City: p.City, County: p.County, State: p.State, Zip: p.Zip}
	if std == stored {
		return nil, nil
	}
	n, err := tx.PropertyUpdateAddress(ctx, db.PropertyUpdateAddressParams{AccountID: accountID, PropertyID: propertyID,
		AptOrUnitNumber: std.AptOrUnitNumber, StreetAddress: std.StreetAddress, City: std.City,
		County: std.County, State: std.State, Zip: std.Zip, Normalized: std.Normalized()})
	if err != nil || n == 0 {
		return nil, err
	}
	return &webhook.Address{AptOrUnitNumber: std.AptOrUnitNumber, StreetAddress: std.StreetAddress,
		City: std.City, County: std.County, State: std.State, Zip: std.Zip}, nil
}
