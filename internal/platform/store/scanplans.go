package store

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/contactd/contactd/gen/db"
)

// pgx plans how to scan every column of every result anew, though a plan depends only on the
// column's type and format and the destination's Go type, which repeat query after query: for
// a contact (45 columns, most of them nullable) that was about 60 allocations and a twentieth
// of contactd's CPU per read. plannedDB keeps the plans per connection and statement and
// hands every case it does not cover (a failed scan included) back to pgx unchanged.
type plannedDB struct{ inner db.DBTX }

// plansKey is where a connection keeps its plans, in pgconn's per-connection CustomData: the
// plans live as long as the connection, and only its holder uses them, so they need no lock.
const plansKey = "contactd.scanPlans"

// statementPlans are the plans for one statement's columns, valid while its columns and
// destinations keep their types.
type statementPlans struct {
	oids    []uint32
	formats []int16
	types   []reflect.Type
	plans   []pgtype.ScanPlan
}

func (p plannedDB) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return p.inner.Exec(ctx, sql, args...)
}

func (p plannedDB) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	return &plannedBatch{BatchResults: p.inner.SendBatch(ctx, b), queued: b.QueuedQueries}
}

// plannedBatch scans a batch's rows with the plans of its statements.
type plannedBatch struct {
	pgx.BatchResults
	queued []*pgx.QueuedQuery
	next   int // the statement whose results come next
}

func (b *plannedBatch) Exec() (pgconn.CommandTag, error) {
	b.next++
	return b.BatchResults.Exec()
}

func (b *plannedBatch) Query() (pgx.Rows, error) {
	sql := ""
	if b.next < len(b.queued) {
		sql = b.queued[b.next].SQL
	}
	b.next++
	rows, err := b.BatchResults.Query()
	if err != nil || sql == "" {
		return rows, err
	}
	return &plannedRows{Rows: rows, sql: sql}, nil
}

func (b *plannedBatch) QueryRow() pgx.Row {
	rows, err := b.Query()
	return plannedRow{rows: rows, err: err}
}

func (p plannedDB) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if strings.Contains(sql, planPerCall) {
		args = append([]any{pgx.QueryExecModeCacheDescribe}, args...)
	}
	rows, err := p.inner.Query(ctx, sql, args...)
	if err != nil {
		return rows, err
	}
	return &plannedRows{Rows: rows, sql: sql}, nil
}

// planPerCall marks a query (in its SQL, as a comment) that PostgreSQL must plan on every
// call with the values it is given: a search whose filters are optional ("@x IS NULL OR ...")
// folds the unused ones away and picks the index of the used ones only in a plan made for
// those values, while a prepared statement may settle on one generic plan for every call.
// pgx then sends it unnamed, with its description cached (no extra round trip).
const planPerCall = "/* plan per call */"

// QueryRow is Query plus pgx's QueryRow contract: no rows is pgx.ErrNoRows, and the rows are
// closed (the connection released) once scanned.
func (p plannedDB) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	rows, err := p.Query(ctx, sql, args...)
	return plannedRow{rows: rows, err: err}
}

type plannedRow struct {
	rows pgx.Rows
	err  error
}

func (r plannedRow) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	r.rows.Close()
	return r.rows.Err()
}

type plannedRows struct {
	pgx.Rows
	sql   string
	plans *statementPlans
}

func (r *plannedRows) Scan(dest ...any) error {
	fields := r.FieldDescriptions()
	values := r.RawValues()
	if len(dest) != len(fields) || len(values) != len(fields) {
		return r.Rows.Scan(dest...) // pgx reports the mismatch (and a lone RowScanner is its case)
	}
	if r.plans == nil || !r.plans.fit(fields, dest) {
		r.plans = r.lookup(fields, dest)
	}
	for i, d := range dest {
		if d == nil {
			continue
		}
		if err := r.plans.plans[i].Scan(values[i], d); err != nil {
			return r.Rows.Scan(dest...) // pgx wraps the error and fails the rows
		}
	}
	return nil
}

// lookup finds the connection's plans for this statement, planning them when the statement is
// new or its column or destination types changed.
func (r *plannedRows) lookup(fields []pgconn.FieldDescription, dest []any) *statementPlans {
	conn := r.Conn()
	data := conn.PgConn().CustomData()
	byStatement, _ := data[plansKey].(map[string]*statementPlans)
	if byStatement == nil {
		byStatement = map[string]*statementPlans{}
		data[plansKey] = byStatement
	}
	if sp := byStatement[r.sql]; sp != nil && sp.fit(fields, dest) {
		return sp
	}
	m := conn.TypeMap()
	sp := &statementPlans{oids: make([]uint32, len(fields)), formats: make([]int16, len(fields)),
		types: make([]reflect.Type, len(fields)), plans: make([]pgtype.ScanPlan, len(fields))}
	for i, f := range fields {
		sp.oids[i], sp.formats[i], sp.types[i] = f.DataTypeOID, f.Format, reflect.TypeOf(dest[i])
		sp.plans[i] = uuidPlan(f, dest[i])
		if sp.plans[i] == nil {
			sp.plans[i] = m.PlanScan(f.DataTypeOID, f.Format, dest[i])
		}
	}
	byStatement[r.sql] = sp
	return sp
}

func (sp *statementPlans) fit(fields []pgconn.FieldDescription, dest []any) bool {
	if len(sp.plans) != len(fields) {
		return false
	}
	for i, f := range fields {
		if sp.oids[i] != f.DataTypeOID || sp.formats[i] != f.Format || (dest[i] != nil && sp.types[i] != reflect.TypeOf(dest[i])) {
			return false
		}
	}
	return true
}

// uuidPlan is the plan of a binary uuid into a uuid.UUID (or a *uuid.UUID when nullable): its
// 16 bytes copied. pgx would take the database/sql path of uuid.UUID's Scan: the value
// formatted as text, then parsed back (a list page spent 5 % of its CPU so). nil for other
// columns and destinations.
func uuidPlan(f pgconn.FieldDescription, dest any) pgtype.ScanPlan {
	if f.DataTypeOID != pgtype.UUIDOID || f.Format != pgtype.BinaryFormatCode {
		return nil
	}
	switch dest.(type) {
	case *uuid.UUID, **uuid.UUID:
		return uuidScan{}
	}
	return nil
}

type uuidScan struct{}

func (uuidScan) Scan(src []byte, dst any) error {
	if src != nil && len(src) != 16 {
		return fmt.Errorf("uuid: %d bytes, not 16", len(src))
	}
	switch d := dst.(type) {
	case *uuid.UUID:
		if src != nil { // a NULL leaves it as it was, as uuid.UUID's Scan does
			*d = uuid.UUID(src)
		}
	case **uuid.UUID:
		if src == nil {
			*d = nil
			return nil
		}
		u := uuid.UUID(src)
		*d = &u
	}
	return nil
}
