package httpapi_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/contactd/contactd/internal/testkit"
)

// BenchmarkRequestPath sends writes through the whole handler (middleware, validation,
// binding, the service, PostgreSQL) without the network, with an Idempotency-Key as
// clients retrying safely send them: its allocations per request are the request path's
// cost in memory, which reading and decoding the body once keeps down.
func BenchmarkRequestPath(b *testing.B) {
	a := testkit.NewAPI(b)
	_, key := a.Account("bench")
	i := 0 // across runs: every request a new contact and a new key, never a replay
	send := func(b *testing.B, path string, body []byte, i int) {
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-api-key", key)
		req.Header.Set("Idempotency-Key", fmt.Sprintf("%s-%d", b.Name(), i))
		rec := httptest.NewRecorder()
		a.Handler.ServeHTTP(rec, req)
		if rec.Code >= 300 {
			b.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
		}
	}
	b.Run("create contact", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			i++
			body := fmt.Appendf(nil, `{"email":"path-%d@example.com","name":"Path %d","tags":["lead","vip"],"phone":"+1 555 010 0100","address":"123 N Main St, Springfield, IL 62704"}`, i, i)
			send(b, "/public/v1/contact", body, i)
		}
	})
	b.Run("batch of 100", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			i++
			var body bytes.Buffer
			body.WriteString(`{"mode":"upsert","contacts":[`)
			for j := range 100 {
				if j > 0 {
					body.WriteByte(',')
				}
				fmt.Fprintf(&body, `{"email":"batch-%d-%d@example.com","name":"Batch %d","tags":["lead"]}`, i, j, j)
			}
			body.WriteString(`]}`)
			send(b, "/public/v1/contacts/batch", body.Bytes(), i)
		}
	})
}
