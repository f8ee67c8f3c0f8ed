package delivery_test

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// A worker process killed in the middle of an attempt loses nothing: its lease on the
// delivery ends and another worker makes the same attempt again, with the same webhook-id.
func TestWorkerKilledMidAttemptIsRetried(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a worker process")
	}
	t.Parallel()
	s := newSetup(t, false)
	release := make(chan struct{})
	s.rc.Respond = func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			select { // hang until the worker that sent it is dead
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		w.WriteHeader(http.StatusOK)
	}
	bin := filepath.Join(t.TempDir(), "contactd")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/contactd/contactd/cmd/contactd").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	s.addTags(t, "crash@example.com", "x")
	worker := exec.Command(bin, "worker", "--database-url", s.a.DatabaseURL, "--webhook-allow-http",
		"--webhook-allowed-networks", "127.0.0.0/8", "--webhook-timeout", "5s", "--webhook-rescue-after", "16s", "--log-level", "error")
	worker.Env = append(os.Environ(), "CONTACTD_SECRET_KEY="+s.a.Cfg.SecretKey)
	worker.Stderr = os.Stderr
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	first := s.rc.Next(t)
	if err := worker.Process.Kill(); err != nil { // SIGKILL: no defers, no clean shutdown
		t.Fatal(err)
	}
	_ = worker.Wait()
	close(release)

	var leasedUntil time.Time
	if err := s.a.Store.Pool.QueryRow(context.Background(), "SELECT leased_until FROM webhook_deliveries").Scan(&leasedUntil); err != nil {
		t.Fatalf("the dead worker's lease: %v", err)
	}
	s.a.StartWorkers()
	second := s.rc.Next(t)
	if second.At.Before(leasedUntil) {
		t.Errorf("made again at %s, before the dead worker's lease ended at %s", second.At, leasedUntil)
	}
	if first.Header.Get("webhook-id") != second.Header.Get("webhook-id") {
		t.Errorf("the retry is another event: %s vs %s", first.Header.Get("webhook-id"), second.Header.Get("webhook-id"))
	}
	att := s.waitAttempts(t, 1)
	if len(att) != 1 || att[0].Attempt != 1 || att[0].ResponseStatus == nil || *att[0].ResponseStatus != 200 {
		t.Errorf("attempts %+v: the cut-off attempt should be recorded once, as made again", att)
	}
}
