package apitime

import (
	"encoding/json"
	"testing"
	"time"
)

func TestMarshalHasMillisecondsAndZ(t *testing.T) {
	t.Parallel()
	loc := time.FixedZone("X", 2*3600)
	for in, want := range map[time.Time]string{
		time.Date(2026, 11, 21, 9, 30, 0, 0, time.UTC):        `"2026-11-21T09:30:00.000Z"`,
		time.Date(2026, 11, 21, 11, 30, 0, 123456789, loc):    `"2026-11-21T09:30:00.123Z"`,
		time.Date(2026, 1, 2, 3, 4, 5, 999_999_999, time.UTC): `"2026-01-02T03:04:05.999Z"`,
	} {
		b, err := json.Marshal(From(in))
		if err != nil || string(b) != want {
			t.Errorf("Marshal(%v) = %s %v, want %s", in, b, err, want)
		}
	}
}

func TestUnmarshal(t *testing.T) {
	t.Parallel()
	var v Time
	if err := json.Unmarshal([]byte(`"2026-11-21T11:30:00.5+02:00"`), &v); err != nil || v.String() != "2026-11-21T09:30:00.500Z" {
		t.Errorf("got %v %v", v, err)
	}
	for _, bad := range []string{`"yesterday"`, `123`, `"2026-11-21"`, `null`} {
		if err := json.Unmarshal([]byte(bad), &v); err == nil {
			t.Errorf("Unmarshal(%s) accepted", bad)
		}
	}
}
