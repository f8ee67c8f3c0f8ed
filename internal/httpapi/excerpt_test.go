package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/testkit"
)

// The delivery log keeps the start of what the receiver answered.
func TestDeliveryLogKeepsTheAnswer(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t, testkit.LocalDelivery)
	a.StartWorkers()
	_, key := a.Account("acme")
	rc := testkit.NewReceiver(t)
	rc.Respond = func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"error":"maintenance until 10:00"}` + strings.Repeat(" ", 400)))
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
	var sub api.WebhookSubscription
	subscribe(t, a, key, rc.URL, "TagsAdded").JSON(t, &sub)
	createContact(t, a, key, map[string]any{"email": "x@example.com", "tags": []string{"a"}})
	rc.Next(t, 5*time.Second)
	var list api.DeliveryAttemptList
	for deadline := time.Now().Add(5 * time.Second); len(list.Attempts) == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		a.Do("GET", "/public/v1/webhooks/"+sub.SubscriptionId+"/deliveries", key, nil).JSON(t, &list)
	}
	if len(list.Attempts) != 1 || list.Attempts[0].ResponseExcerpt == nil ||
		!strings.HasPrefix(*list.Attempts[0].ResponseExcerpt, `{"error":"maintenance until 10:00"}`) || len(*list.Attempts[0].ResponseExcerpt) != 256 {
		t.Fatalf("attempts %+v", list.Attempts)
	}
}
