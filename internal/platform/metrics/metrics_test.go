package metrics_test

import (
	"io"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/contactd/contactd/internal/platform/metrics"
)

// The refused groups are read from their counter at each scrape.
func TestGroupsRefusedAreReadAtEachScrape(t *testing.T) {
	m := metrics.New()
	var refused uint64
	m.WatchGroupsRefused(func() uint64 { return refused })
	for _, n := range []uint64{0, 3} {
		refused = n
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		body, _ := io.ReadAll(rec.Result().Body)
		want := "\ncontactd_db_groups_refused_total " + strconv.FormatUint(n, 10) + "\n"
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", strings.TrimSpace(want))
		}
	}
}
