package store

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// registerUUID teaches a connection's type map google/uuid's UUID as the 16 bytes it is.
// Without it pgx reaches uuid.UUID through driver.Valuer and sql.Scanner: text formatting and
// parsing, and failed encode plans (each an fmt.Errorf) on every query: about 7 % of a read's
// CPU in the load benchmark.
func registerUUID(_ context.Context, conn *pgx.Conn) error {
	registerUUIDOn(conn.TypeMap())
	return nil
}

func registerUUIDOn(m *pgtype.Map) {
	m.TryWrapEncodePlanFuncs = append([]pgtype.TryWrapEncodePlanFunc{tryWrapUUIDEncodePlan}, m.TryWrapEncodePlanFuncs...)
	m.TryWrapScanPlanFuncs = append([]pgtype.TryWrapScanPlanFunc{tryWrapUUIDScanPlan}, m.TryWrapScanPlanFuncs...)
}

// pgUUID is uuid.UUID as pgtype's UUID valuer and scanner.
type pgUUID uuid.UUID

func (u pgUUID) UUIDValue() (pgtype.UUID, error) { return pgtype.UUID{Bytes: u, Valid: true}, nil }

func (u *pgUUID) ScanUUID(v pgtype.UUID) error {
	if !v.Valid {
		return errors.New("cannot scan NULL into uuid.UUID")
	}
	*u = v.Bytes
	return nil
}

type uuidEncodePlan struct{ next pgtype.EncodePlan }

func (p *uuidEncodePlan) SetNext(next pgtype.EncodePlan) { p.next = next }

func (p *uuidEncodePlan) Encode(value any, buf []byte) ([]byte, error) {
	return p.next.Encode(pgUUID(value.(uuid.UUID)), buf)
}

// uuidPointerEncodePlan is for nullable parameters: pgx does not dereference a pointer to a
// driver.Valuer, so *uuid.UUID went through text again.
type uuidPointerEncodePlan struct{ next pgtype.EncodePlan }

func (p *uuidPointerEncodePlan) SetNext(next pgtype.EncodePlan) { p.next = next }

func (p *uuidPointerEncodePlan) Encode(value any, buf []byte) ([]byte, error) {
	u := value.(*uuid.UUID)
	if u == nil {
		return nil, nil // NULL
	}
	return p.next.Encode(pgUUID(*u), buf)
}

func tryWrapUUIDEncodePlan(value any) (pgtype.WrappedEncodePlanNextSetter, any, bool) {
	switch v := value.(type) {
	case uuid.UUID:
		return &uuidEncodePlan{}, pgUUID(v), true
	case *uuid.UUID:
		return &uuidPointerEncodePlan{}, pgUUID{}, true
	}
	return nil, nil, false
}

type uuidScanPlan struct{ next pgtype.ScanPlan }

func (p *uuidScanPlan) SetNext(next pgtype.ScanPlan) { p.next = next }

func (p *uuidScanPlan) Scan(src []byte, dst any) error {
	return p.next.Scan(src, (*pgUUID)(dst.(*uuid.UUID)))
}

func tryWrapUUIDScanPlan(target any) (pgtype.WrappedScanPlanNextSetter, any, bool) {
	if t, ok := target.(*uuid.UUID); ok {
		return &uuidScanPlan{}, (*pgUUID)(t), true
	}
	return nil, nil, false
}
