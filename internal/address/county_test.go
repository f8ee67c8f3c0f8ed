package address

import "testing"

func TestCounty(t *testing.T) {
	cases := []struct{ zip, state, want string }{
		{"62704", "IL", "Sangamon County"},
		{"62704-1234", "IL", "Sangamon County"},
		{"10001", "NY", "New York County"},
		{"90210", "CA", "Los Angeles County"},
		{"60601", "IL", "Cook County"},
		{"94105", "CA", "San Francisco County"},
		{"02108", "MA", "Suffolk County"},
		{"75201", "TX", "Dallas County"},
		{"98101", "WA", "King County"},
		{"19103", "PA", "Philadelphia County"},
		{"20001", "DC", "District of Columbia"},
		{"70112", "LA", "Orleans Parish"},
		{"99501", "AK", "Anchorage Municipality"},
		{"96742", "HI", "Kalawao County"},
		{"82190", "WY", "Teton County"},
		{"62704", "MO", ""}, // ZIP of another state: no guess
		{"00000", "IL", ""}, // not a ZCTA
		{"", "IL", ""},
		{"6270", "IL", ""},
	}
	for _, tc := range cases {
		if got := County(tc.zip, tc.state); got != tc.want {
			t.Errorf("County(%q, %q) = %q, want %q", tc.zip, tc.state, got, tc.want)
		}
	}
}

func TestCountyTableSize(t *testing.T) {
	// the 2010 Census has 33,120 ZCTAs; a truncated or empty table must not pass quietly.
	if n := len(countyTable()); n != 33120 {
		t.Fatalf("county table has %d ZIPs, want 33120", n)
	}
}

func TestParseFillsCounty(t *testing.T) {
	a, err := Parse("500 E Capitol Ave, Springfield, IL 62701")
	if err != nil || a.County != "Sangamon County" {
		t.Fatalf("Parse = %+v, %v; want Sangamon County", a, err)
	}
}

func BenchmarkCounty(b *testing.B) {
	countyTable()
	for b.Loop() {
		County("62704", "IL")
	}
}
