package delivery_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/testkit"
)

// BenchmarkDelivery measures sustained deliveries per second and the time from the API's
// response to the arrival of the first attempt, with a local receiver and three
// subscriptions (so each create fans out to three deliveries).
//
//	go test -run XXX -bench Delivery -benchtime 3000x ./internal/delivery/
func BenchmarkDelivery(b *testing.B) {
	a := testkit.NewAPI(b, testkit.LocalDelivery, func(c *testkit.Config) { c.WebhookWorkers = 64 })
	rc := testkit.NewReceiver(b)
	_, key := a.Account("bench")
	const subs = 3
	for i := range subs {
		if r := a.Do("POST", "/public/v1/webhooks", key, map[string]any{"url": fmt.Sprintf("%s?%d", rc.URL, i), "eventType": "TagsAdded"}); r.Status != 200 {
			b.Fatalf("subscribe: %d", r.Status)
		}
	}
	a.StartWorkers()
	var mu sync.Mutex
	answered := map[string]time.Time{}
	var lat []time.Duration
	done := make(chan struct{})
	total := b.N * subs
	go func() {
		for range total {
			d := <-rc.Got
			var p api.WebhookPayload
			_ = json.Unmarshal(d.Body, &p)
			mu.Lock()
			if t, ok := answered[p.Events[0].Data.ContactInfo.ContactId]; ok {
				lat = append(lat, d.At.Sub(t))
			}
			mu.Unlock()
		}
		close(done)
	}()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	next := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				id, at := createRaw(b, client, a.URL, key, i)
				mu.Lock()
				answered[id] = at
				mu.Unlock()
			}
		}()
	}
	for i := range b.N {
		next <- i
	}
	close(next)
	wg.Wait()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		b.Fatal("deliveries did not all arrive")
	}
	elapsed := time.Since(start)
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(total)/elapsed.Seconds(), "deliveries/s")
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	}
}

func createRaw(b *testing.B, c *http.Client, base, key string, i int) (string, time.Time) {
	body := fmt.Sprintf(`{"email":"bench%d@example.com","tags":["t"]}`, i)
	req, _ := http.NewRequest("POST", base+"/public/v1/contact", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", key)
	resp, err := c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var out api.CreateContactResult
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
		b.Fatalf("create: %d %v", resp.StatusCode, err)
	}
	return out.Contact.ContactId, time.Now()
}
