package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/platform/store"
	"github.com/contactd/contactd/internal/testkit"
)

// groupRig is a Group of inserts of numbers into a table that refuses negative ones, whose
// first group can be held until more writes wait behind it.
type groupRig struct {
	st      *store.Store
	group   *store.Group[int, int]
	hold    chan struct{} // closed to let the first group go
	held    chan struct{} // closed once the first group is being sent
	mu      sync.Mutex
	sent    [][]int // every group sent, in order
	failing error   // when set, every group fails with it before reaching PostgreSQL
}

func newGroupRig(t *testing.T) *groupRig {
	t.Helper()
	rig := &groupRig{st: testkit.NewStore(t), hold: make(chan struct{}), held: make(chan struct{})}
	ctx := context.Background()
	if _, err := rig.st.Pool.Exec(ctx, `CREATE TABLE numbers (n int PRIMARY KEY CHECK (n >= 0))`); err != nil {
		t.Fatal(err)
	}
	rig.group = store.NewGroup(rig.st, store.GroupOptions{MaxItems: 4, MaxFlying: 1},
		func(ctx context.Context, _ *db.Queries, items []int) ([]int, error) {
			rig.mu.Lock()
			first := len(rig.sent) == 0
			rig.sent = append(rig.sent, slices.Clone(items))
			failing := rig.failing
			rig.mu.Unlock()
			if first {
				close(rig.held)
				<-rig.hold
			}
			if failing != nil {
				return nil, failing
			}
			b := &pgx.Batch{}
			for _, n := range items {
				b.Queue(`INSERT INTO numbers VALUES ($1)`, n)
			}
			br := rig.st.Pool.SendBatch(ctx, b)
			var failed error
			for range items {
				if _, err := br.Exec(); err != nil && failed == nil {
					failed = err
				}
			}
			if err := br.Close(); failed == nil {
				failed = err
			}
			if failed != nil {
				return nil, failed
			}
			out := make([]int, len(items))
			for i, n := range items {
				out[i] = n * 10
			}
			return out, nil
		})
	return rig
}

// start holds the first group with write first in it, then asks for each of next while it is
// held; it returns each write's result and error, once all have answered.
func (rig *groupRig) start(t *testing.T, first int, next ...int) (map[int]int, map[int]error) {
	t.Helper()
	var mu sync.Mutex
	res, errs := map[int]int{}, map[int]error{}
	var wg sync.WaitGroup
	do := func(n int) {
		wg.Go(func() {
			r, err := rig.group.Do(context.Background(), n)
			mu.Lock()
			res[n], errs[n] = r, err
			mu.Unlock()
		})
	}
	do(first)
	<-rig.held
	for i, n := range next { // one by one: the queue keeps the order they are asked in
		do(n)
		waitFor(t, func() bool { return rig.group.Waiting() == i+1 })
	}
	close(rig.hold)
	wg.Wait()
	return res, errs
}

func (rig *groupRig) stored(t *testing.T) []int {
	t.Helper()
	rows, _ := rig.st.Pool.Query(context.Background(), `SELECT n FROM numbers ORDER BY n`)
	got, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	testkit.Eventually(t, "the condition", cond)
}

// TestGroupSendsWaitingWritesTogether: writes asked while a group is in flight leave together
// in the next ones, in the order they were asked, at most MaxItems each; each caller gets
// its own result.
func TestGroupSendsWaitingWritesTogether(t *testing.T) {
	t.Parallel()
	rig := newGroupRig(t)
	res, errs := rig.start(t, 1, 2, 3, 4, 5, 6, 7)
	for n := 1; n <= 7; n++ {
		if errs[n] != nil || res[n] != n*10 {
			t.Errorf("write %d: %d, %v", n, res[n], errs[n])
		}
	}
	if want := [][]int{{1}, {2, 3, 4, 5}, {6, 7}}; !equalGroups(rig.sent, want) {
		t.Errorf("groups sent %v, want %v ", rig.sent, want)
	}
	if got := rig.stored(t); !slices.Equal(got, []int{1, 2, 3, 4, 5, 6, 7}) {
		t.Errorf("stored %v", got)
	}
}

// TestGroupRefusedSendsEachAlone: a group PostgreSQL refuses committed nothing, so each of its
// writes is sent again alone; only the refused write fails.
func TestGroupRefusedSendsEachAlone(t *testing.T) {
	t.Parallel()
	rig := newGroupRig(t)
	res, errs := rig.start(t, 1, 2, -3, 4)
	for _, n := range []int{1, 2, 4} {
		if errs[n] != nil || res[n] != n*10 {
			t.Errorf("write %d: %d, %v", n, res[n], errs[n])
		}
	}
	if !errors.Is(errs[-3], apperr.ErrInternal) {
		t.Errorf("write -3: %v, want the refusal as an internal error", errs[-3])
	}
	if want := [][]int{{1}, {2, -3, 4}, {2}, {-3}, {4}}; !equalGroups(rig.sent, want) {
		t.Errorf("groups sent %v, want %v", rig.sent, want)
	}
	if got := rig.stored(t); !slices.Equal(got, []int{1, 2, 4}) {
		t.Errorf("stored %v", got)
	}
	if n := rig.st.GroupsRefused(); n != 1 {
		t.Errorf("%d groups counted as refused, want the one (/metrics: contactd_db_groups_refused_total)", n)
	}
}

// TestGroupBrokenFailsAll: a group that fails without PostgreSQL's answer (the connection
// broke: it may have committed) or because the database cannot answer now (a timeout) is
// not sent again write by write, and every caller gets the failure.
func TestGroupBrokenFailsAll(t *testing.T) {
	t.Parallel()
	for name, failure := range map[string]error{
		"connection": fmt.Errorf("write: %w", context.DeadlineExceeded),
		"timeout":    &pgconn.PgError{Code: "57014", Message: "canceling statement due to statement timeout"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rig := newGroupRig(t)
			rig.failing = failure
			_, errs := rig.start(t, 1, 2, 3)
			for n := 1; n <= 3; n++ {
				if !errors.Is(errs[n], apperr.ErrUnavailable) {
					t.Errorf("write %d: %v, want unavailable", n, errs[n])
				}
			}
			if want := [][]int{{1}, {2, 3}}; !equalGroups(rig.sent, want) {
				t.Errorf("groups sent %v, want %v", rig.sent, want)
			}
		})
	}
}

// TestGroupCallerGivesUp: a caller whose context ends while its write waits gets its context's
// error at once, and its write is left out of the group.
func TestGroupCallerGivesUp(t *testing.T) {
	t.Parallel()
	rig := newGroupRig(t)
	go func() { _, _ = rig.group.Do(context.Background(), 1) }()
	<-rig.held
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := rig.group.Do(ctx, 2)
		done <- err
	}()
	waitFor(t, func() bool { return rig.group.Waiting() == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("given-up write: %v", err)
	}
	close(rig.hold)
	waitFor(t, func() bool { return slices.Equal(rig.stored(t), []int{1}) })
	if _, err := rig.group.Do(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
	if want := [][]int{{1}, {3}}; !equalGroups(rig.sent, want) {
		t.Errorf("groups sent %v, want %v", rig.sent, want)
	}
}

func equalGroups(got, want [][]int) bool {
	return slices.EqualFunc(got, want, func(a, b []int) bool {
		return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
	})
}
