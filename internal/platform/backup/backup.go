// Package backup keeps the embedded PostgreSQL recoverable to any moment, with pgBackRest
// (Debian's pgbackrest): PostgreSQL hands every finished WAL segment to pgBackRest's
// archive-push, which stores it in the repository; a backup copies the data directory; a
// restore rebuilds a data directory from a backup and replays the archived WAL up to a
// chosen time. Nothing here copies or replays anything itself.
package backup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/contactd/contactd/internal/platform/pgembed"
)

// Stanza is pgBackRest's name for contactd's cluster in the repository.
const Stanza = "contactd"

// Repo is a pgBackRest repository in a directory of its own: the backups and the archived
// WAL under repo/, with pgBackRest's logs and locks beside them, encrypted (pgBackRest's
// repository cipher, AES-256-CBC) with a passphrase the directory never holds: pgBackRest's
// configuration, which carries it for the archiving PostgreSQL runs, is kept with the cluster
// (ConfDir), so a copy of the repository alone reads as noise.
type Repo struct {
	Dir string
	// ConfDir is where pgBackRest's configuration is kept: the backed-up cluster's directory.
	ConfDir    string
	passphrase string
}

// Open is the repository in dir (made when first attached to a cluster), its configuration
// in confDir, encrypted with passphrase. A repository made before backups were encrypted
// stays as it is, unencrypted (Encrypted): pgBackRest cannot encrypt one in place; move it
// aside and take a full backup to start an encrypted one.
func Open(dir, confDir, passphrase string) (Repo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Repo{}, err
	}
	conf, err := filepath.Abs(confDir)
	if err != nil {
		return Repo{}, err
	}
	if passphrase == "" {
		return Repo{}, errors.New("backups need a passphrase to encrypt the repository with")
	}
	return Repo{Dir: abs, ConfDir: conf, passphrase: passphrase}, nil
}

// Encrypted reports whether the repository is encrypted: false only for one made before
// backups were (its backup.info, which an encrypted repository holds encrypted, is plain).
func (r Repo) Encrypted() bool {
	info, err := os.ReadFile(filepath.Join(r.path("repo"), "backup", Stanza, "backup.info"))
	return err != nil || !strings.HasPrefix(string(info), "[")
}

// Attach makes the repository's directories and configuration for the running cluster c,
// owned by the user PostgreSQL runs as, which archives into them. Call it once c is started
// with Settings: until then its archive_command fails, and PostgreSQL keeps the WAL and
// tries again.
func (r Repo) Attach(c *pgembed.Cluster) error {
	for _, d := range []string{r.Dir, r.path("repo"), r.path("log"), r.path("lock")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
		if err := c.Own(d); err != nil {
			return err
		}
	}
	return r.configure(c)
}

func (r Repo) path(name string) string { return filepath.Join(r.Dir, name) }
func (r Repo) conf() string            { return filepath.Join(r.ConfDir, "pgbackrest.conf") }

// ArchiveTimeout bounds how long a committed write is only in the live cluster's WAL: a
// segment is archived when it is full, or this long after its first write, whichever comes
// first (PostgreSQL's archive_timeout).
const ArchiveTimeout = time.Minute

// Settings are the PostgreSQL settings that archive every WAL segment into the repository
// (pgembed.Options.Settings), at the latest every timeout (0: ArchiveTimeout), so at most that
// much of acknowledged writes is only in the live cluster's WAL.
func (r Repo) Settings(timeout time.Duration) []string {
	if timeout <= 0 {
		timeout = ArchiveTimeout
	}
	return []string{
		"wal_level=replica",
		"archive_mode=on",
		fmt.Sprintf("archive_command='pgbackrest --config=%s --stanza=%s archive-push %%p'", r.conf(), Stanza),
		fmt.Sprintf("archive_timeout=%d", int(timeout.Seconds())),
	}
}

// configure writes pgBackRest's configuration for the cluster, whose port and directories
// it names: pgbackrest reads it from the cluster's archive_command and from every command.
func (r Repo) configure(c *pgembed.Cluster) error {
	cipher := []string{"repo1-cipher-type=aes-256-cbc", "repo1-cipher-pass=" + r.passphrase}
	if !r.Encrypted() {
		cipher = nil
	}
	if err := os.MkdirAll(r.ConfDir, 0o700); err != nil {
		return err
	}
	if err := c.Own(r.ConfDir); err != nil {
		return err
	}
	conf := strings.Join(append(append([]string{
		"[global]",
		"repo1-path=" + r.path("repo")}, cipher...),
		// two full backups are kept, with the WAL that recovers from the older one on: what
		// one held is gone once two more full backups have ended (docs/operations.md)
		"repo1-retention-full=2",
		"log-path="+r.path("log"),
		"lock-path="+r.path("lock"),
		"log-level-console=warn",
		"log-level-file=info",
		// a backup starts at once (an immediate checkpoint) instead of at the next one
		"start-fast=y",
		// lz4 rather than the default gzip: much less CPU for somewhat larger files, so
		// archiving keeps up with a busy cluster on a small machine
		"compress-type=lz4",
		"process-max=2",
		"",
		"["+Stanza+"]",
		"pg1-path="+c.DataDir(),
		"pg1-socket-path="+c.SocketDir(),
		fmt.Sprintf("pg1-port=%d", c.Port),
		"pg1-user=postgres",
		"",
	), "\n")
	if err := os.WriteFile(r.conf(), []byte(conf), 0o600); err != nil {
		return err
	}
	return c.Own(r.conf())
}

// pgbackrest runs a pgBackRest command as the cluster's user.
func (r Repo) pgbackrest(ctx context.Context, c *pgembed.Cluster, args ...string) error {
	_, err := r.output(ctx, c, args...)
	return err
}

func (r Repo) output(ctx context.Context, c *pgembed.Cluster, args ...string) (string, error) {
	prog, err := exec.LookPath("pgbackrest")
	if err != nil {
		return "", errors.New("pgbackrest is not installed (Debian's pgbackrest package: scripts/ensure-pgbackrest.sh)")
	}
	out, err := c.RunAs(ctx, prog, append([]string{"--config=" + r.conf(), "--stanza=" + Stanza}, args...)...)
	if err != nil {
		return out, fmt.Errorf("pgbackrest %s: %w: %s", args[0], err, out)
	}
	return out, nil
}

// Backups are the repository's backups, oldest first.
func (r Repo) Backups(ctx context.Context, c *pgembed.Cluster) ([]Info, error) {
	out, err := r.output(ctx, c, "info", "--output=json")
	if err != nil {
		return nil, err
	}
	var stanzas []struct {
		Backup []struct {
			Label     string `json:"label"`
			Type      string `json:"type"`
			Timestamp struct {
				Start int64 `json:"start"`
				Stop  int64 `json:"stop"`
			} `json:"timestamp"`
		} `json:"backup"`
	}
	if err := json.Unmarshal([]byte(out), &stanzas); err != nil {
		return nil, fmt.Errorf("pgbackrest info: %w", err)
	}
	var backups []Info
	for _, st := range stanzas {
		for _, b := range st.Backup {
			backups = append(backups, Info{Label: b.Label, Type: b.Type,
				Started: time.Unix(b.Timestamp.Start, 0).UTC(), Stopped: time.Unix(b.Timestamp.Stop, 0).UTC()})
		}
	}
	return backups, nil
}

// Info is one backup of the repository. pgBackRest keeps its times to the second.
type Info struct {
	Label, Type      string
	Started, Stopped time.Time
}

// Backup takes a backup of the running cluster c: a full one when full is set or the
// repository has none, else a differential one (what changed since the last full). The
// repository's stanza is made on first use; pgBackRest refuses a cluster that does not
// archive into it (c not started with Settings).
func (r Repo) Backup(ctx context.Context, c *pgembed.Cluster, full bool) error {
	if err := r.Attach(c); err != nil {
		return err
	}
	if err := r.pgbackrest(ctx, c, "stanza-create"); err != nil {
		return err
	}
	kind := "diff"
	if full {
		kind = "full"
	}
	return r.pgbackrest(ctx, c, "backup", "--type="+kind)
}

// FullDue reports whether the next backup should be full: the repository has none, or its
// newest ended more than every before now.
func (r Repo) FullDue(ctx context.Context, c *pgembed.Cluster, every time.Duration, now time.Time) (bool, error) {
	if err := r.Attach(c); err != nil {
		return false, err
	}
	if err := r.pgbackrest(ctx, c, "stanza-create"); err != nil {
		return false, err
	}
	backups, err := r.Backups(ctx, c)
	if err != nil {
		return false, err
	}
	newest := time.Time{}
	for _, b := range backups {
		if b.Type == "full" && b.Stopped.After(newest) {
			newest = b.Stopped
		}
	}
	return newest.IsZero() || now.Sub(newest) >= every, nil
}

// Archive has the WAL written so far archived, and returns once it is: PostgreSQL switches
// to a new segment and pgBackRest checks that the finished one reached the repository. What
// was committed before the call can then be restored.
func (r Repo) Archive(ctx context.Context, c *pgembed.Cluster) error {
	if err := r.Attach(c); err != nil {
		return err
	}
	return r.pgbackrest(ctx, c, "check")
}

// Restore rebuilds, in dir (a new cluster directory, as pgembed.Options.Dir), the cluster
// as it was at the time at: the latest backup taken before it, then the archived WAL
// replayed up to the last transaction committed at or before it. The cluster is started
// until the replay has ended and it has been promoted (it takes writes), then stopped:
// `CONTACTD_DATA_DIR=dir contactd serve` runs on it. from is the cluster the repository
// backs up (its configuration names it), running or not.
func (r Repo) Restore(ctx context.Context, from *pgembed.Cluster, dir string, at time.Time) (*pgembed.Cluster, error) {
	if err := r.configure(from); err != nil { // the cluster may be gone, with its configuration
		return nil, err
	}
	data := filepath.Join(dir, "data")
	if entries, err := os.ReadDir(data); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("restore into %s: not empty", data)
	}
	for _, d := range []string{dir, data} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
		if err := from.Own(d); err != nil {
			return nil, err
		}
	}
	// The backup to start from: the latest that ended by T. pgBackRest would look for one that
	// ended before T, to the second, and find none when T is within the second a backup ended.
	backups, err := r.Backups(ctx, from)
	if err != nil {
		return nil, err
	}
	set := ""
	for _, b := range backups {
		if !b.Stopped.After(at) {
			set = b.Label
		}
	}
	if set == "" {
		return nil, fmt.Errorf("restore to %s: no backup had ended by then", at.UTC().Format(time.RFC3339Nano))
	}
	if err := r.pgbackrest(ctx, from, "restore", "--set="+set, "--pg1-path="+data, "--type=time",
		"--target="+at.UTC().Format("2006-01-02 15:04:05.000000+00"), "--target-action=promote"); err != nil {
		return nil, err
	}
	restored, err := pgembed.Start(ctx, pgembed.Options{Dir: dir})
	if err != nil {
		return nil, err
	}
	if err := promoted(ctx, restored); err != nil {
		_ = restored.Stop()
		return nil, err
	}
	return restored, nil
}

// promoted waits until the restored cluster has replayed the WAL to its target and left
// recovery: PostgreSQL takes connections (read-only) before that.
func promoted(ctx context.Context, c *pgembed.Cluster) error {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		var recovering bool
		if err := conn.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&recovering); err != nil {
			return err
		}
		if !recovering {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("restored cluster still recovering: %w", ctx.Err())
		case <-tick.C:
		}
	}
}
