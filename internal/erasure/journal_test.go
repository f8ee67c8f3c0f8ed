package erasure_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/contactd/contactd/internal/erasure"
)

// The journal reads back what it was given; a last line cut short (a crash mid-write, before
// its erasure could commit) is left out, and cut off by the next entry; a damaged line
// before the last is an error.
func TestJournalReadsBackAndSurvivesACutLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "erasure-journal")
	j := erasure.OpenJournal(path)
	if got, err := j.Entries(); err != nil || got != nil {
		t.Fatalf("a journal not made yet: %v, %v", got, err)
	}
	ids := []uuid.UUID{uuid.New(), uuid.New()}
	for _, id := range ids {
		if err := j.Append(erasure.JournalEntry{ErasureID: id, Suppressed: []erasure.JournalDigest{{Kind: "email", Digest: []byte{1, 2}}}}); err != nil {
			t.Fatal(err)
		}
	}
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(whole, `{"erasureId":"`...), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := j.Entries()
	if err != nil || len(got) != 2 || got[0].ErasureID != ids[0] || got[1].ErasureID != ids[1] || string(got[1].Suppressed[0].Digest) != "\x01\x02" {
		t.Fatalf("entries with a cut last line: %+v, %v", got, err)
	}
	third := uuid.New()
	if err := j.Append(erasure.JournalEntry{ErasureID: third}); err != nil {
		t.Fatal(err)
	}
	if got, err := j.Entries(); err != nil || len(got) != 3 || got[2].ErasureID != third {
		t.Fatalf("an entry written after the cut line: %+v, %v; want it after the two whole ones", got, err)
	}
	if err := os.WriteFile(path, append([]byte("{oops\n"), whole...), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Entries(); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("a damaged first line: %v, want an error naming it", err)
	}
}
