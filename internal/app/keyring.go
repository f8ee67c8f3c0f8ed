package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/config"
	"github.com/contactd/contactd/internal/platform/seal"
	"github.com/contactd/contactd/internal/subscription"
)

// secretKeyFile is where the embedded database's sealing key is kept.
const secretKeyFile = "secret-key"

// Keyring is the key that seals the stored secrets, with the older keys that still open
// them: CONTACTD_SECRET_KEY, or the file CONTACTD_SECRET_KEY_FILE names, or, for the embedded
// database, DataDir/secret-key (created with mode 0600 while the database holds no sealed
// secret). It fails, saying what to do, when there is no key, or when the database holds
// secrets no configured key opens: contactd must never sign with a wrong secret.
func (rt *Runtime) Keyring(ctx context.Context, cfg config.Config) (*seal.Keyring, error) {
	current, err := rt.currentKey(ctx, cfg)
	if err != nil {
		return nil, err
	}
	older, err := seal.ParseKeys(cfg.OldSecretKeys())
	if err != nil {
		return nil, fmt.Errorf("CONTACTD_SECRET_KEYS_OLD: %w", err)
	}
	return seal.NewKeyring(current, older...)
}

func (rt *Runtime) currentKey(ctx context.Context, cfg config.Config) ([]byte, error) {
	switch {
	case cfg.SecretKey != "":
		return seal.ParseKey(cfg.SecretKey)
	case cfg.SecretKeyFile != "":
		return readKeyFile(cfg.SecretKeyFile, "CONTACTD_SECRET_KEY_FILE")
	case !rt.Embedded():
		return nil, errors.New("no secret key: contactd seals the webhook secrets it stores; set CONTACTD_SECRET_KEY " +
			"(or CONTACTD_SECRET_KEY_FILE) to 32 random bytes in base64, e.g. `head -c 32 /dev/urandom | base64`, " +
			"the same on every process, and keep it safe: without it the stored secrets cannot be used")
	}
	path := filepath.Join(cfg.DataDir, secretKeyFile)
	if _, err := os.Stat(path); err == nil {
		return readKeyFile(path, path)
	}
	var sealed []string
	if err := rt.Store.Do(ctx, func(q *db.Queries) (err error) {
		sealed, err = q.SecretKeyIDs(ctx)
		return err
	}); err != nil {
		return nil, err
	}
	if len(sealed) > 0 {
		return nil, fmt.Errorf("%s is missing, but the embedded database holds secrets sealed with a key: restore "+
			"the file, or set CONTACTD_SECRET_KEY to the key", path)
	}
	key := seal.NewKey()
	if err := os.WriteFile(path, []byte(key+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("create the secret key file: %w", err)
	}
	rt.log.Info("created the key that seals stored secrets", "file", path)
	return seal.ParseKey(key)
}

func readKeyFile(path, name string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	k, err := seal.ParseKey(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return k, nil
}

// openSecrets is the keyring checked against the database, for the commands that sign or
// seal: a wrong or missing key stops them here.
func openSecrets(ctx context.Context, cfg config.Config, rt *Runtime) (*seal.Keyring, error) {
	keys, err := rt.Keyring(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("secret key: %w", err)
	}
	if err := subscription.NewSecrets(rt.Store, keys, Now).Check(ctx); err != nil {
		return nil, fmt.Errorf("secret key: %w", err)
	}
	return keys, nil
}
