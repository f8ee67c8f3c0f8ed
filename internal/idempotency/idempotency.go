// Package idempotency keeps the first response to a write sent with an Idempotency-Key and
// replays it to retries of the same request (the IETF httpapi draft's header). A response is
// stored in the transaction of the change it reports, so a retry after any failure — a lost
// response, a process killed before or after its commit — gets either the stored response or
// a fresh run, never a second change. Stored bodies are sealed (CONTACTD_SECRET_KEY): they
// carry contacts' data, and a subscription's signing secret once, as it was created.
package idempotency

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/platform/queue"
	"github.com/contactd/contactd/internal/platform/seal"
	"github.com/contactd/contactd/internal/platform/store"
)

// TTL is how long a key's response is kept.
const TTL = 24 * time.Hour

// Errors of a key's reuse.
var (
	ErrReused = apperr.New(apperr.KindUnprocessable, "IdempotencyKeyReused",
		"this Idempotency-Key was used with another request (method, path or body); use a new key for a new request")
	ErrInProgress = apperr.New(apperr.KindConflict, "IdempotencyKeyInProgress",
		"a request with this Idempotency-Key is still running; retry after it has finished")
)

// Response is what a request answered.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Request identifies a write: its method, its path with the query, and its body.
type Request struct {
	Method, Path string
	Body         []byte
}

func (r Request) fingerprint() []byte {
	h := sha256.New()
	h.Write([]byte(r.Method + " " + r.Path + "\n"))
	h.Write(r.Body)
	return h.Sum(nil)
}

// Service runs requests once per account and key.
type Service struct {
	store *store.Store
	keys  *seal.Keyring
	now   func() time.Time
	log   *slog.Logger
	// beforeCommit and afterCommit are test hooks: a process that dies on either side of
	// the commit.
	beforeCommit, afterCommit func()
}

// New returns a Service over st that seals stored bodies with keys.
func New(st *store.Store, keys *seal.Keyring, now func() time.Time, log *slog.Logger) *Service {
	return &Service{store: st, keys: keys, now: now, log: log}
}

// place binds a sealed body to its row: a body moved to another account's or key's row does
// not open.
func place(account uuid.UUID, key string) string {
	return "idempotency_keys.body/" + account.String() + "/" + key
}

// openBody is a stored body in clear: sealed ones are opened, and one stored in clear by an
// older contactd (JSON never starts like a sealed value) is taken as it is.
func (s *Service) openBody(account uuid.UUID, key string, body []byte) ([]byte, error) {
	if seal.KeyIDOf(string(body)) == "" {
		return body, nil
	}
	return s.keys.Open(string(body), place(account, key))
}

// Do runs run for the first request with key in account, in one transaction with the
// storing of its response, and answers a retry of the same request with that response
// (replayed true). The same key for another request is ErrReused, and while the first one
// runs, ErrInProgress. A response run says not to keep (a 5xx: the retry should run again)
// is answered but not stored, and its changes roll back.
func (s *Service) Do(ctx context.Context, account uuid.UUID, key string, req Request,
	run func(ctx context.Context) (resp Response, keep bool)) (resp Response, replayed bool, err error) {
	fp := req.fingerprint()
	now := s.now()
	errDiscard := errors.New("discard")
	err = s.store.Atomic(ctx, func(ctx context.Context, q *db.Queries) error {
		locked, err := q.IdempotencyLock(ctx, db.IdempotencyLockParams{AccountID: account, Key: key})
		if err != nil {
			return err
		}
		if !locked {
			return ErrInProgress
		}
		stored, err := q.IdempotencyGet(ctx, db.IdempotencyGetParams{AccountID: account, Key: key, ExpiresAt: now})
		switch {
		case err == nil:
			if !bytes.Equal(stored.Fingerprint, fp) {
				return ErrReused
			}
			body, err := s.openBody(account, key, stored.Body)
			if err != nil {
				return err
			}
			resp, replayed = Response{Status: int(stored.Status), Body: body}, true
			return json.Unmarshal(stored.Headers, &resp.Header)
		case !errors.Is(store.Translate(err), apperr.ErrNoRows):
			return err
		}
		var keep bool
		resp, keep = run(ctx)
		if !keep {
			return errDiscard
		}
		headers, err := json.Marshal(resp.Header)
		if err != nil {
			return err
		}
		if err := q.IdempotencySave(ctx, db.IdempotencySaveParams{AccountID: account, Key: key, Fingerprint: fp,
			Method: req.Method, Path: req.Path, Status: int32(resp.Status), Headers: headers,
			Body:      []byte(s.keys.Seal(resp.Body, place(account, key))),
			CreatedAt: now, ExpiresAt: now.Add(TTL), ContactIds: about(req.Path, resp.Body)}); err != nil {
			return err
		}
		if s.beforeCommit != nil {
			s.beforeCommit()
		}
		return nil
	})
	if errors.Is(err, errDiscard) {
		return resp, false, nil
	}
	if err == nil && !replayed && s.afterCommit != nil {
		s.afterCommit()
	}
	return resp, replayed, err
}

// Reseal seals every stored body under the current key (bodies sealed under an older one, or
// stored in clear by an older contactd), for `contactd secrets rekey`; it returns how many.
func (s *Service) Reseal(ctx context.Context) (int, error) {
	prefix := []byte("v1." + s.keys.CurrentID() + ".")
	var afterAccount uuid.UUID
	afterKey, n := "", 0
	for {
		var page []db.IdempotencyBodiesToResealRow
		err := s.store.Do(ctx, func(q *db.Queries) (err error) {
			page, err = q.IdempotencyBodiesToReseal(ctx, db.IdempotencyBodiesToResealParams{AfterAccount: afterAccount,
				AfterKey: afterKey, CurrentPrefix: prefix, PageSize: 500})
			return err
		})
		if err != nil {
			return n, err
		}
		for _, r := range page {
			afterAccount, afterKey = r.AccountID, r.Key
			body, err := s.openBody(r.AccountID, r.Key, r.Body)
			if err != nil {
				return n, err
			}
			sealed := []byte(s.keys.Seal(body, place(r.AccountID, r.Key)))
			if err := s.store.Do(ctx, func(q *db.Queries) error {
				return q.IdempotencySetBody(ctx, db.IdempotencySetBodyParams{AccountID: r.AccountID, Key: r.Key, Body: sealed, Was: r.Body})
			}); err != nil {
				return n, err
			}
			n++
		}
		if len(page) < 500 {
			return n, nil
		}
	}
}

// about lists the ids a stored response is about, so an erasure finds it: each id in the
// request's path (/contact/{id}/tags), and each contactId the body names (a create, a batch's
// results, a DuplicateContact).
func about(path string, body []byte) []uuid.UUID {
	ids := []uuid.UUID{}
	for seg := range strings.SplitSeq(path, "/") {
		if id, err := uuid.Parse(seg); err == nil {
			ids = append(ids, id)
		}
	}
	const key = `"contactId":"`
	for rest := body; ; {
		i := bytes.Index(rest, []byte(key))
		if i < 0 {
			return ids
		}
		rest = rest[i+len(key):]
		if end := bytes.IndexByte(rest, '"'); end > 0 {
			if id, err := uuid.ParseBytes(rest[:end]); err == nil && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
}

// ForgetContact deletes the stored responses about a contact, in the caller's transaction
// (its erasure): a retry of one of those requests then runs again.
func ForgetContact(ctx context.Context, q *db.Queries, account, contactID uuid.UUID) error {
	_, err := q.IdempotencyForgetContact(ctx, db.IdempotencyForgetContactParams{AccountID: account, ContactID: contactID})
	return err
}

// CrashHooks has fn called just before the transaction of a stored response commits, and
// after it has: a test kills the request there, as a crash would.
func (s *Service) CrashHooks(beforeCommit, afterCommit func()) {
	s.beforeCommit, s.afterCommit = beforeCommit, afterCommit
}

// pruneBatch is how many expired keys one statement deletes.
const pruneBatch = 5000

// PruneTask deletes expired keys every hour.
func (s *Service) PruneTask() queue.Task {
	return queue.Task{Name: "idempotency_prune", Every: time.Hour, Run: func(ctx context.Context) error {
		total := int64(0)
		for {
			var n int64
			err := s.store.Do(ctx, func(q *db.Queries) (err error) {
				n, err = q.IdempotencyPrune(ctx, db.IdempotencyPruneParams{Before: s.now(), Batch: pruneBatch})
				return err
			})
			if err != nil {
				return err
			}
			total += n
			if n < pruneBatch {
				if total > 0 {
					s.log.Info("idempotency keys pruned", slog.Int64("keys", total))
				}
				return nil
			}
		}
	}}
}
