package address

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// parseCases are addresses and what Parse makes of them (a zero Address: ErrUnparseable).
var parseCases = []struct {
	in   string
	want Address
}{
	{"123 N Main St Apt 4, Springfield, IL 62704",
		Address{"4", "123 N Main St", "Springfield", "", "IL", "62704"}},
	{"123 North Main Street, Apartment 4, Springfield, Illinois 62704-1234",
		Address{"4", "123 N Main St", "Springfield", "", "IL", "62704-1234"}},
	{"1600 Pennsylvania Avenue NW, Washington, DC 20500",
		Address{"", "1600 Pennsylvania Ave NW", "Washington", "", "DC", "20500"}},
	{"350 Fifth Avenue, New York, NY 10118",
		Address{"", "350 Fifth Ave", "New York", "", "NY", "10118"}},
	{"1 Infinite Loop, Cupertino, CA 95014",
		Address{"", "1 Infinite Loop", "Cupertino", "", "CA", "95014"}},
	{"PO Box 1234, Austin, TX 78701",
		Address{"", "PO Box 1234", "Austin", "", "TX", "78701"}},
	{"P.O. Box 77, Juneau AK 99801",
		Address{"", "PO Box 77", "Juneau", "", "AK", "99801"}},
	{"post office box 9, Boise, ID",
		Address{"", "PO Box 9", "Boise", "", "ID", ""}},
	{"500 W 2nd St Suite 1900, Austin, TX 78701",
		Address{"1900", "500 W 2nd St", "Austin", "", "TX", "78701"}},
	{"742 Evergreen Terrace, Springfield, OR 97477",
		Address{"", "742 Evergreen Ter", "Springfield", "", "OR", "97477"}},
	{"221B Baker St, Boston, MA 02116",
		Address{"", "221B Baker St", "Boston", "", "MA", "02116"}},
	{"123 main st apt 4b springfield il 62704",
		Address{"4B", "123 Main St", "Springfield", "", "IL", "62704"}},
	{"123 MAIN ST #4, SPRINGFIELD, IL 62704",
		Address{"4", "123 Main St", "Springfield", "", "IL", "62704"}},
	{"123 Main St # 12, Springfield, IL 62704",
		Address{"12", "123 Main St", "Springfield", "", "IL", "62704"}},
	{"10 Downing Road Unit 3, Salt Lake City, UT 84101",
		Address{"3", "10 Downing Rd", "Salt Lake City", "", "UT", "84101"}},
	{"4 Privet Drive\nLittle Whinging, NH 03031",
		Address{"", "4 Privet Dr", "Little Whinging", "", "NH", "03031"}},
	{"123 Main St, Springfield, IL 62704, USA",
		Address{"", "123 Main St", "Springfield", "", "IL", "62704"}},
	{"123 Main St., Springfield, Ill. 62704",
		Address{}}, // "Ill." is not a state spelling we accept
	{"99-12 Queens Blvd, Rego Park, NY 11374",
		Address{"", "99-12 Queens Blvd", "Rego Park", "", "NY", "11374"}},
	{"123 1/2 Elm St, Dayton, OH 45402",
		Address{"", "123 1/2 Elm St", "Dayton", "", "OH", "45402"}},
	{"12 North St, Pittsfield, MA 01201",
		Address{"", "12 North St", "Pittsfield", "", "MA", "01201"}},
	{"8 E Broadway, Salt Lake City, UT 84111",
		Address{"", "8 E Broadway", "Salt Lake City", "", "UT", "84111"}},
	{"2500 Highway 61 Hastings MN 55033",
		Address{"", "2500 Highway 61", "Hastings", "", "MN", "55033"}},
	{"77 Massachusetts Ave, Cambridge, MA",
		Address{"", "77 Massachusetts Ave", "Cambridge", "", "MA", ""}},
	{"77 Massachusetts Ave, MA 02139",
		Address{"", "77 Massachusetts Ave", "", "", "MA", "02139"}},
	{"1 Main St, San Juan, Puerto Rico 00901",
		Address{"", "1 Main St", "San Juan", "", "PR", "00901"}},
	{"400 Broad St, Seattle, Washington 98109",
		Address{"", "400 Broad St", "Seattle", "", "WA", "98109"}},
	{"3 Ocean Blvd Ste 200, Myrtle Beach, South Carolina 29577",
		Address{"200", "3 Ocean Blvd", "Myrtle Beach", "", "SC", "29577"}},
	{"15 McDonald Ln, Knoxville, TN 37919",
		Address{"", "15 McDonald Ln", "Knoxville", "", "TN", "37919"}},
	{"  900   Court  Street ,  Park City ,  UT   84060  ",
		Address{"", "900 Court St", "Park City", "", "UT", "84060"}},
	{"900 Court St Park City UT 84060",
		Address{"", "900 Court St", "Park City", "", "UT", "84060"}},
	{"45 Southwest Pine Way Apt 7, Portland, OR 97201",
		Address{"7", "45 SW Pine Way", "Portland", "", "OR", "97201"}},
	{"12 Elm St Floor 3, Hartford, CT 061031234",
		Address{"3", "12 Elm St", "Hartford", "", "CT", "06103-1234"}},
}

func TestParse(t *testing.T) {
	t.Parallel()
	tests := parseCases
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := Parse(tc.in)
			if tc.want == (Address{}) {
				if !errors.Is(err, ErrUnparseable) {
					t.Fatalf("Parse(%q) = %+v, %v; want ErrUnparseable", tc.in, got, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.in, err)
			}
			// the county comes from the ZIP table, tested on its own in TestCounty.
			tc.want.County = County(tc.want.Zip, tc.want.State)
			if got != tc.want {
				t.Errorf("Parse(%q)\n got %+v\nwant %+v", tc.in, got, tc.want)
			}
		})
	}
}

var rejectedInputs = []string{
	"", "   ", "not an address", "Springfield, IL 62704", "Main St, Springfield, IL",
	"123, Springfield, IL", "123 Main St, Springfield", "123 Main St Springfield 62704",
	"62704", "IL", "PO Box, Austin, TX", "123 Main St, Springfield, ZZ 62704",
}

func TestParseRejects(t *testing.T) {
	t.Parallel()
	for _, in := range rejectedInputs {
		if a, err := Parse(in); !errors.Is(err, ErrUnparseable) {
			t.Errorf("Parse(%q) = %+v, %v; want ErrUnparseable", in, a, err)
		}
	}
}

func TestNormalizedIgnoresSpellingAndCase(t *testing.T) {
	t.Parallel()
	a, err1 := Parse("123 North Main Street Apartment 4, SPRINGFIELD, Illinois 62704-1234")
	b, err2 := Parse("123 n main st apt 4 springfield il 62704")
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if a.Normalized() != b.Normalized() {
		t.Errorf("%q != %q", a.Normalized(), b.Normalized())
	}
}

var fuzzSeeds = []string{
	"123 N Main St Apt 4, Springfield, IL 62704", "PO Box 1, Austin, TX", "#,#,IL",
	"1 a st # ,x, NY 12345", "1 N, x, CA", "9 Box Box Box TX 12345", "\x00\n,;",
}

func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		a, err := Parse(in)
		if err != nil {
			return
		}
		if a.StreetAddress == "" || a.State == "" || (a.City == "" && a.Zip == "") {
			t.Fatalf("Parse(%q) accepted an incomplete address %+v", in, a)
		}
		for _, s := range []string{a.StreetAddress, a.City, a.AptOrUnitNumber, a.Zip} {
			if utf8.ValidString(in) && !utf8.ValidString(s) {
				t.Fatalf("Parse(%q) produced invalid UTF-8 %q", in, s)
			}
			if strings.TrimSpace(s) != s || strings.Contains(s, "  ") {
				t.Fatalf("Parse(%q) produced untrimmed %q", in, s)
			}
		}
		if len(a.State) != 2 {
			t.Fatalf("Parse(%q) state %q", in, a.State)
		}
	})
}

// BenchmarkParse: the addresses of a create (contactbench's) and of a few other shapes.
func BenchmarkParse(b *testing.B) {
	for _, in := range []string{
		"123 N Main St Apt 4, Springfield, IL 62704",
		"1600 Pennsylvania Avenue NW, Washington, DC 20500",
		"123 main st apt 4b springfield il 62704",
		"PO Box 1234, Austin, TX 78701",
	} {
		b.Run(strings.Fields(in)[1], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse(in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
