package consumer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/testkit"
)

// TestNodeReceiver runs the Node receiver of docs/webhooks.md (tools/node/receiver.mjs, the
// standardwebhooks npm package) against real deliveries from contactd: the signature verifies,
// the same headers with a changed body do not, and the event is the one that happened.
func TestNodeReceiver(t *testing.T) {
	node := needTool(t, "node", "make node-deps")
	nodeBin(t, "tsc") // the same install brings standardwebhooks

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, node, filepath.Join(nodeTools, "receiver.mjs"))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("receiver stderr:\n%s", stderr.String())
		}
	})
	out := lines(t, stdout)
	var port int
	if _, err := fmt.Sscanf(nextLine(t, out, 30*time.Second), "listening %d", &port); err != nil {
		t.Fatal(err)
	}

	a := testkit.NewAPI(t, testkit.LocalDelivery)
	a.StartWorkers()
	_, key := a.Account("node-receiver")
	r := a.Do("POST", "/public/v1/webhooks", key, map[string]any{
		"url": fmt.Sprintf("http://127.0.0.1:%d/contactd", port), "eventType": "TagsAdded"})
	if r.Status != 200 {
		t.Fatalf("subscribe: %d %s", r.Status, r.Body)
	}
	var sub api.WebhookSubscription
	r.JSON(t, &sub)
	if _, err := fmt.Fprintln(stdin, *sub.Secret); err != nil {
		t.Fatal(err)
	}

	r = a.Do("POST", "/public/v1/contact", key, map[string]any{"email": "node.receiver@example.com"})
	var created api.CreateContactResult
	r.JSON(t, &created)
	contactID := created.Contact.ContactId
	if r := a.Do("POST", "/public/v1/contact/"+contactID+"/tags", key, map[string]any{"tags": []string{"vip"}}); r.Status != 200 {
		t.Fatalf("add tags: %d %s", r.Status, r.Body)
	}

	var got struct {
		Verified         bool               `json:"verified"`
		Error            string             `json:"error"`
		WebhookID        string             `json:"webhookId"`
		TamperedRejected bool               `json:"tamperedRejected"`
		Events           []api.WebhookEvent `json:"events"`
	}
	line := nextLine(t, out, 30*time.Second)
	if err := json.Unmarshal([]byte(line), &got); err != nil {
		t.Fatalf("receiver said %q: %v", line, err)
	}
	if !got.Verified {
		t.Fatalf("standardwebhooks did not verify contactd's signature: %s", got.Error)
	}
	if !got.TamperedRejected {
		t.Error("standardwebhooks accepted a changed body with the original signature")
	}
	if len(got.Events) != 1 || got.Events[0].EventType != api.EventTypeTagsAdded || got.Events[0].EventId != got.WebhookID ||
		got.Events[0].Data.ContactInfo.ContactId != contactID || got.Events[0].Data.TagsAddedInfo == nil ||
		strings.Join(got.Events[0].Data.TagsAddedInfo.TagsAdded, ",") != "vip" {
		t.Errorf("verified payload: %s", line)
	}
	// the receiver's 204 acknowledged it: the delivery is done.
	testkit.Eventually(t, "the delivery Succeeded", func() bool {
		return a.Count(t, `select count(*) from webhook_deliveries where event_id = $1 and status = 'Succeeded'`, got.WebhookID) == 1
	})
}
