package store

import (
	"bytes"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
)

func TestUUIDParametersAreBinary(t *testing.T) { // not parallel: it counts allocations
	m := pgtype.NewMap()
	registerUUIDOn(m)
	u := uuid.Must(uuid.NewV7())
	var nilU *uuid.UUID
	for _, tc := range []struct {
		name  string
		value any
		want  []byte
	}{
		{"uuid.UUID", u, u[:]},
		{"*uuid.UUID", &u, u[:]},
		{"nil *uuid.UUID", nilU, nil},
	} {
		buf, err := m.Encode(pgtype.UUIDOID, pgtype.BinaryFormatCode, tc.value, nil)
		if err != nil || !bytes.Equal(buf, tc.want) {
			t.Errorf("%s: %x %v, want %x", tc.name, buf, err, tc.want)
		}
		// through driver.Valuer it is formatted as text and parsed back: a dozen allocations.
		if n := testing.AllocsPerRun(100, func() { _, _ = m.Encode(pgtype.UUIDOID, pgtype.BinaryFormatCode, tc.value, buf[:0]) }); n > 1 {
			t.Errorf("%s: %.0f allocations per encode, want at most 1", tc.name, n)
		}
	}
}
