package main

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The baseline is the ceiling contactd is measured against: a bare net/http server over the
// same PostgreSQL, no middleware, no validation, no auth, one statement per request.
const baselineSchema = `
CREATE TABLE IF NOT EXISTS bench_baseline (
    id         uuid PRIMARY KEY,
    email      text NOT NULL UNIQUE,
    name       text,
    tags       text[] NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL
)`

type baselineContact struct {
	ID        uuid.UUID `json:"contactId"`
	Email     string    `json:"email"`
	Name      *string   `json:"name,omitempty"`
	Tags      []string  `json:"tags"`
	CreatedAt time.Time `json:"createdAt"`
}

// serveBaseline runs the baseline server until SIGTERM (contactbench baseline ADDR URL ACCOUNT).
// account is the account whose contacts the rows baseline writes (baseline_rows.go).
func serveBaseline(addr, dbURL, account string, maxConns int32) error {
	accountID, err := uuid.Parse(account)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return err
	}
	cfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()

	mux := http.NewServeMux()
	mux.HandleFunc("GET /contact/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, err := uuid.Parse(r.PathValue("id"))
		if err != nil {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		var c baselineContact
		err = pool.QueryRow(r.Context(), `SELECT id, email, name, tags, created_at FROM bench_baseline WHERE id = $1`, id).
			Scan(&c.ID, &c.Email, &c.Name, &c.Tags, &c.CreatedAt)
		if errors.Is(err, pgx.ErrNoRows) {
			http.Error(w, "not found", http.StatusNotFound)
			return
		} else if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		writeJSON(w, c)
	})
	mux.HandleFunc("POST /contact", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Email string   `json:"email"`
			Name  *string  `json:"name"`
			Tags  []string `json:"tags"`
		}
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&in); err != nil || in.Email == "" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		c := baselineContact{ID: uuid.Must(uuid.NewV7()), Email: in.Email, Name: in.Name, Tags: in.Tags,
			CreatedAt: time.Now().UTC().Truncate(time.Millisecond)}
		if c.Tags == nil {
			c.Tags = []string{}
		}
		if _, err := pool.Exec(r.Context(), `INSERT INTO bench_baseline (id, email, name, tags, created_at) VALUES ($1, $2, $3, $4, $5)`,
			c.ID, c.Email, c.Name, c.Tags, c.CreatedAt); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		writeJSON(w, c)
	})
	mux.Handle("POST /contact-rows", rowsCreate(pool, accountID))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}
