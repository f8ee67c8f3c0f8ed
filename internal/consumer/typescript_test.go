package consumer_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/contactd/contactd/internal/testkit"
)

// TestTypeScriptClient generates a TypeScript client from openapi.yaml with openapi-typescript,
// type-checks the smoke scenario (tools/node/smoke) against it with tsc --strict, and runs it
// under Node through openapi-fetch against a live contactd.
func TestTypeScriptClient(t *testing.T) {
	node := needTool(t, "node", "make node-deps")
	generate, tsc := nodeBin(t, "openapi-typescript"), nodeBin(t, "tsc")

	// The build sits inside tools/node so that Node resolves openapi-fetch from its node_modules.
	build, err := os.MkdirTemp(nodeTools, ".smoke-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(build) })
	for _, f := range []string{"client-smoke.ts", "node-globals.d.ts", "tsconfig.json"} {
		b, err := os.ReadFile(filepath.Join(nodeTools, "smoke", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(build, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run(t, time.Minute, nil, generate, filepath.Join(repoRoot, "openapi.yaml"), "-o", filepath.Join(build, "schema.d.ts"))
	run(t, 2*time.Minute, nil, tsc, "-p", filepath.Join(build, "tsconfig.json"), "--outDir", filepath.Join(build, "out"))

	a := testkit.NewAPI(t, testkit.LocalDelivery)
	_, key := a.Account("ts-client")
	rc := testkit.NewReceiver(t)
	out := run(t, time.Minute, []string{"CONTACTD_URL=" + a.URL, "CONTACTD_API_KEY=" + key, "CONTACTD_HOOK_URL=" + rc.URL},
		node, filepath.Join(build, "out", "client-smoke.js"))

	var result struct {
		OK             bool   `json:"ok"`
		ContactID      string `json:"contactId"`
		SubscriptionID string `json:"subscriptionId"`
	}
	if err := json.Unmarshal([]byte(out), &result); err != nil || !result.OK {
		t.Fatalf("smoke output: %v\n%s", err, out)
	}
	// What the TypeScript client did is in the database as it reported.
	var tags []string
	if err := testkit.Pool(a.Store).QueryRow(t.Context(),
		`select tags from contacts where contact_id = $1`, result.ContactID).Scan(&tags); err != nil {
		t.Fatal(err)
	}
	if len(tags) != 2 || tags[0] != "lead" || tags[1] != "vip" {
		t.Errorf("tags in the database: %v", tags)
	}
	var subs int
	if err := testkit.Pool(a.Store).QueryRow(t.Context(),
		`select count(*) from webhook_subscriptions where subscription_id = $1 and event_type = 'TagsAdded'`, result.SubscriptionID).Scan(&subs); err != nil || subs != 1 {
		t.Errorf("subscription in the database: %d %v", subs, err)
	}
}
