package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/contactd/contactd/internal/testkit"
)

// TestConsoleInABrowser drives Debian's Chromium through the console as a person would: sign
// in, search a contact, add a tag, see its TagsAdded event and its delivery, redeliver it,
// sign out. No page may log an error (a CSP violation would), and axe-core finds no WCAG 2
// A/AA violation on the main pages. With CONTACTD_CONSOLE_SCREENSHOTS=DIR it keeps a
// screenshot of each (make console-screenshots).
func TestConsoleInABrowser(t *testing.T) {
	if os.Getenv("CONTACTD_CONSUMER_TESTS") == "" && os.Getenv("CONTACTD_CONSOLE_SCREENSHOTS") == "" {
		t.Skip("browser tests run with CONTACTD_CONSUMER_TESTS=1 (make test)")
	}
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium is not installed (make browser-deps): %v", err)
	}
	axe, err := os.ReadFile("../../tools/node/node_modules/axe-core/axe.min.js")
	if err != nil {
		t.Fatalf("axe-core is not installed (make node-deps): %v", err)
	}
	shots := os.Getenv("CONTACTD_CONSOLE_SCREENSHOTS")

	a := testkit.NewAPI(t, testkit.LocalDelivery)
	a.StartWorkers()
	_, key := a.Account("acme")
	rc := testkit.NewReceiver(t)
	a.Do("POST", "/public/v1/webhooks", key, map[string]any{"url": rc.URL, "eventType": "TagsAdded"})
	a.Do("POST", "/public/v1/segments", key, map[string]any{"name": "Springfield leads", "filter": map[string]any{"groups": []any{
		map[string]any{"conditions": []any{map[string]any{"attribute": "address.city", "operator": "eq", "value": "Springfield"}}},
		map[string]any{"conditions": []any{map[string]any{"attribute": "tags", "operator": "contains", "value": "vip"}}}}}})
	for i, email := range []string{"jane.doe@example.com", "sam.lee@example.com", "ana.ruiz@example.com"} {
		a.Do("POST", "/public/v1/contact", key, map[string]any{"email": email, "name": strings.Split(email, "@")[0],
			"tags": []string{"lead"}, "address": fmt.Sprintf("%d N Main St, Springfield, IL 62704", 100+i)})
	}
	for range 3 { // the creates' TagsAdded deliveries
		rc.Next(t)
	}

	profile, err := os.MkdirTemp("", "contactd-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(profile) // after the browser is gone (deferred cancels run first)
	// chromium's start is waited for as long as the test's own bound: chromedp's default, 20 s,
	// ran out once while make test's other packages loaded CI's two cores
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.WindowSize(1280, 900), chromedp.UserDataDir(profile),
		chromedp.WSURLReadTimeout(2*time.Minute))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(allocCtx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	defer cancelTimeout()

	var mu sync.Mutex
	var problems []string
	chromedp.ListenTarget(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.APITypeError || ev.Type == runtime.APITypeWarning {
				args, _ := json.Marshal(ev.Args)
				problems = append(problems, fmt.Sprintf("console.%s %s", ev.Type, args))
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+ev.ExceptionDetails.Text)
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.LevelError || ev.Entry.Level == log.LevelWarning {
				problems = append(problems, fmt.Sprintf("%s: %s %s", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL))
			}
		}
	})

	// checkPage runs axe-core on the page (through the DevTools protocol, which the page's CSP
	// does not restrict) and keeps a screenshot.
	checkPage := func(name string) chromedp.Action {
		return chromedp.ActionFunc(func(ctx context.Context) error {
			var violations []string
			run := chromedp.Evaluate(string(axe)+`;axe.run(document, {runOnly: ['wcag2a', 'wcag2aa']})
				.then(r => r.violations.map(v => v.id + ': ' + v.help + ' (' + v.nodes.map(n => n.target.join(' ')).join(', ') + ')'))`,
				&violations, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) })
			if err := run.Do(ctx); err != nil {
				return err
			}
			if len(violations) > 0 {
				t.Errorf("%s: accessibility violations:\n%s", name, strings.Join(violations, "\n"))
			}
			if shots == "" {
				return nil
			}
			var png []byte
			if err := chromedp.FullScreenshot(&png, 100).Do(ctx); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(shots, "console-"+name+".png"), png, 0o644)
		})
	}

	var body string
	err = chromedp.Run(ctx,
		log.Enable(),
		chromedp.Navigate(a.URL+"/console"),
		chromedp.WaitVisible(`#key`, chromedp.ByQuery),
		checkPage("sign-in"),
		chromedp.SendKeys(`#key`, key, chromedp.ByQuery),
		chromedp.Submit(`#key`, chromedp.ByQuery),
		chromedp.WaitVisible(`#q`, chromedp.ByQuery),
		chromedp.SendKeys(`#q`, "jane", chromedp.ByQuery),
		chromedp.Submit(`#q`, chromedp.ByQuery),
		chromedp.WaitNotPresent(`//a[text()="sam.lee@example.com"]`, chromedp.BySearch),
		checkPage("contacts"),
		chromedp.Click(`//a[text()="jane.doe@example.com"]`, chromedp.BySearch),
		chromedp.WaitVisible(`#new-tag`, chromedp.ByQuery),
		chromedp.SendKeys(`#new-tag`, "vip", chromedp.ByQuery),
		chromedp.Submit(`#new-tag`, chromedp.ByQuery),
		chromedp.WaitVisible(`//button[@aria-label="Remove tag vip"]`, chromedp.BySearch),
		// one evaluation in the page, not a node id resolved and then read: the id went stale
		// once between the two ("No node with given id found")
		chromedp.Evaluate(`document.querySelector("main").outerHTML`, &body),
		checkPage("contact"),
	)
	if err != nil {
		t.Fatalf("sign in, search, add a tag: %v", err)
	}
	if strings.Count(body, "<strong>TagsAdded</strong>") != 2 || !strings.Contains(body, `"vip"`) {
		t.Errorf("the contact's page does not show the two TagsAdded events:\n%s", body)
	}
	first := rc.Next(t)
	if !strings.Contains(string(first.Body), `"vip"`) {
		t.Fatalf("the delivery of the new tag: %s", first.Body)
	}

	var subscriptionPage string
	err = chromedp.Run(ctx,
		chromedp.Click(`//a[text()="Segments"]`, chromedp.BySearch),
		chromedp.WaitVisible(`//h1[text()="Segments"]`, chromedp.BySearch),
		checkPage("segments"),
		chromedp.Click(`//a[text()="Webhooks"]`, chromedp.BySearch),
		chromedp.WaitVisible(`//td/a[contains(text(), "/hook")]`, chromedp.BySearch),
		checkPage("webhooks"),
		chromedp.Click(`//td/a[contains(text(), "/hook")]`, chromedp.BySearch),
		chromedp.WaitVisible(`//button[text()="Redeliver"]`, chromedp.BySearch),
		checkPage("webhook"),
		chromedp.Location(&subscriptionPage),
		chromedp.Click(`(//button[text()="Redeliver"])[1]`, chromedp.BySearch),
	)
	if err != nil {
		t.Fatalf("webhooks, redeliver: %v", err)
	}
	again := rc.Next(t)
	if again.Header.Get("webhook-id") != first.Header.Get("webhook-id") {
		t.Errorf("redelivered %s, the newest delivery was %s", again.Header.Get("webhook-id"), first.Header.Get("webhook-id"))
	}

	var url string
	if err := chromedp.Run(ctx,
		// a fresh load: the redeliver's answer may still be replacing the page
		chromedp.Navigate(subscriptionPage),
		chromedp.WaitVisible(`//h2[text()="Delivery log"]`, chromedp.BySearch),
		chromedp.Click(`//button[text()="Sign out"]`, chromedp.BySearch),
		chromedp.WaitVisible(`#key`, chromedp.ByQuery),
		chromedp.Location(&url),
		chromedp.Navigate(a.URL+"/console/contacts"),
		chromedp.WaitVisible(`#key`, chromedp.ByQuery),
	); err != nil {
		t.Fatalf("sign out: %v", err)
	}
	if !strings.HasSuffix(url, "/console/login") {
		t.Errorf("after sign-out at %s", url)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(problems) > 0 {
		t.Errorf("the browser reported:\n%s", strings.Join(problems, "\n"))
	}
}
