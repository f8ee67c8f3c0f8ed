package main

import (
	"strings"
	"testing"
)

// TestParseStatementStats: each message's CPU (user + system, not the backend's running
// total) goes to the statement its backend's duration line named just before, backends
// interleaved; binds apart from executes.
func TestParseStatementStats(t *testing.T) {
	log := `2026-11-26 05:23:46.239 UTC [10] LOG:  duration: 0.042 ms  bind stmtcache_1: -- name: DeliveryClaimNext :many
	WITH due AS (
2026-11-26 05:23:46.239 UTC [11] LOG:  duration: 0.023 ms  execute stmtcache_2: -- name: DeliveryRecordSuccess :exec
2026-11-26 05:23:46.239 UTC [10] LOG:  BIND MESSAGE STATISTICS
2026-11-26 05:23:46.239 UTC [10] DETAIL:  ! system usage stats:
	!	0.000030 s user, 0.000010 s system, 0.000038 s elapsed
	!	[2.130587 s user, 0.392019 s system total]
2026-11-26 05:23:46.239 UTC [11] LOG:  EXECUTE MESSAGE STATISTICS
2026-11-26 05:23:46.239 UTC [11] DETAIL:  ! system usage stats:
	!	0.000100 s user, 0.000000 s system, 0.000113 s elapsed
	!	[1.000000 s user, 0.100000 s system total]
2026-11-26 05:23:46.240 UTC [10] LOG:  duration: 0.200 ms  execute stmtcache_1: -- name: DeliveryClaimNext :many
2026-11-26 05:23:46.240 UTC [10] LOG:  EXECUTE MESSAGE STATISTICS
2026-11-26 05:23:46.240 UTC [10] DETAIL:  ! system usage stats:
	!	0.000200 s user, 0.000050 s system, 0.000250 s elapsed
2026-11-26 05:23:46.241 UTC [11] LOG:  duration: 0.020 ms  execute stmtcache_2: -- name: DeliveryRecordSuccess :exec
2026-11-26 05:23:46.241 UTC [11] LOG:  EXECUTE MESSAGE STATISTICS
2026-11-26 05:23:46.241 UTC [11] DETAIL:  ! system usage stats:
	!	0.000060 s user, 0.000040 s system, 0.000100 s elapsed
`
	costs, err := parseStatementStats(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	want := []statementCost{
		{name: "DeliveryClaimNext", calls: 1, seconds: 0.000250},
		{name: "DeliveryRecordSuccess", calls: 2, seconds: 0.000200},
		{name: "bind DeliveryClaimNext", calls: 1, seconds: 0.000040},
	}
	if len(costs) != len(want) {
		t.Fatalf("costs %+v, want %+v", costs, want)
	}
	for i, c := range costs {
		w := want[i]
		if c.name != w.name || c.calls != w.calls || c.seconds < w.seconds-1e-9 || c.seconds > w.seconds+1e-9 {
			t.Errorf("costs[%d] = %+v, want %+v", i, c, w)
		}
	}
}
