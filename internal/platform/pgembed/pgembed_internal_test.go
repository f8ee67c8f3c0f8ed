package pgembed

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A port taken between its choice and PostgreSQL's bind is not a failed start: the cluster
// starts on another one.
func TestStartMovesOffAPortTakenMeanwhile(t *testing.T) {
	if _, err := findBinaries(); err != nil {
		t.Skip(err)
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	takenPort := taken.Addr().(*net.TCPAddr).Port
	picks := 0
	pickPort = func() (int, error) {
		if picks++; picks == 1 {
			return takenPort, nil
		}
		return freePort()
	}
	defer func() { pickPort = freePort }()

	dir, err := os.MkdirTemp("", "pgembed-test-")
	if err == nil {
		err = os.Chmod(dir, 0o755) // PostgreSQL runs as the postgres user
	}
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	c, err := Start(context.Background(), Options{Dir: dir, Ephemeral: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	log, _ := os.ReadFile(filepath.Join(dir, "postgres.log"))
	if picks != 2 || c.Port == takenPort || !strings.Contains(string(log), "Address already in use") {
		t.Fatalf("picks %d, port %d (taken %d); log:\n%s", picks, c.Port, takenPort, log)
	}
}
