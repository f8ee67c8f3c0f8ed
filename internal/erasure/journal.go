package erasure

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Journal keeps every erasure outside the database, so that a restore of the database to a
// time before an erasure does not bring the person back: `contactd restore` applies it again
// (Service.Reapply) before the restored database serves a request or sends a delivery. It is
// a file of JSON lines beside the backups (CONTACTD_BACKUP_DIR), written and synced before the
// erasure commits: an erasure that then fails to commit is applied at the next restore, which
// is what its requester asked for. It holds no personal data: ids, times, the key that asked
// and the suppression list's keyed digests (with the list's key, sealed under the operator's
// key, in case the restore goes back to before the list had one).
type Journal struct {
	path string
	mu   sync.Mutex
}

// JournalEntry is one erasure as the journal keeps it.
type JournalEntry struct {
	ErasureID uuid.UUID `json:"erasureId"`
	AccountID uuid.UUID `json:"accountId"`
	// ContactID is the contact the erasure record names; Contacts every id the person had
	// (it, its merged duplicates), each erased again where a restore brings it back.
	ContactID uuid.UUID   `json:"contactId"`
	Contacts  []uuid.UUID `json:"contacts"`
	ErasedAt  time.Time   `json:"erasedAt"`
	KeyID     uuid.UUID   `json:"keyId"`
	KeyPrefix string      `json:"keyPrefix"`
	KeyName   string      `json:"keyName"`
	// Suppressed are the suppression list's entries: kinds and keyed digests.
	Suppressed []JournalDigest `json:"suppressed"`
	// ListKeySealed is the suppression list's key as its row holds it (sealed).
	ListKeySealed string `json:"listKeySealed"`
}

// JournalDigest is one suppression entry.
type JournalDigest struct {
	Kind   string `json:"kind"`
	Digest []byte `json:"digest"`
}

// OpenJournal is the journal in the file at path, made on the first erasure.
func OpenJournal(path string) *Journal { return &Journal{path: path} }

// Append writes e at the end of the journal and syncs it to disk.
func (j *Journal) Append(e JournalEntry) error {
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	f, err := os.OpenFile(j.path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("erasure journal: %w", err)
	}
	end, err := completeLines(f)
	if err == nil {
		_, err = f.WriteAt(append(line, '\n'), end)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("erasure journal: %w", err)
	}
	return nil
}

// completeLines is where the journal's last whole line ends: a line cut short by a crash
// while it was written (its erasure never committed) is cut off, so the next one starts a
// line of its own.
func completeLines(f *os.File) (int64, error) {
	info, err := f.Stat()
	if err != nil || info.Size() == 0 {
		return 0, err
	}
	end := info.Size()
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, end-1); err != nil || last[0] == '\n' {
		return end, err
	}
	const chunk = 64 << 10
	for at := end; at > 0; {
		from := max(at-chunk, 0)
		buf := make([]byte, at-from)
		if _, err := f.ReadAt(buf, from); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
			end = from + int64(i) + 1
			return end, f.Truncate(end)
		}
		at = from
	}
	return 0, f.Truncate(0)
}

// Entries are the journal's entries, oldest first; none when it does not exist. A last line
// cut short (a crash while it was written, before its erasure committed) is left out.
func (j *Journal) Entries() ([]JournalEntry, error) {
	b, err := os.ReadFile(j.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("erasure journal: %w", err)
	}
	var out []JournalEntry
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, len(b)+1)
	for n := 1; sc.Scan(); n++ {
		var e JournalEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			if !bytes.HasSuffix(b, []byte("\n")) && n == bytes.Count(b, []byte("\n"))+1 {
				break
			}
			return nil, fmt.Errorf("erasure journal %s line %d: %w", j.path, n, err)
		}
		out = append(out, e)
	}
	return out, sc.Err()
}
