package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/contactd/contactd/internal/platform/store"
	"github.com/contactd/contactd/internal/testkit"
)

// A session left idle inside a transaction is ended by PostgreSQL after IdleInTxTimeout: its
// locks and snapshot stop holding others back, and the transaction's next statement fails.
// Proven by the session's end (its backend gone), never by a wait of the test's own.
func TestASessionIdleInATransactionIsEnded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.Open(ctx, testkit.NewDatabase(t), store.Options{MaxConns: 4, IdleInTxTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tx, err := st.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var pid int
	if err := tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the idle transaction's session ended", func() bool {
		var n int
		err := st.Pool.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", pid).Scan(&n)
		return err == nil && n == 0
	})
	if _, err := tx.Exec(ctx, "SELECT 1"); err == nil {
		t.Error("the ended transaction's next statement succeeded")
	}
}
