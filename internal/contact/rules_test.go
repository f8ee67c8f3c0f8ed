package contact

import (
	"errors"
	"strings"
	"testing"

	"github.com/contactd/contactd/internal/apperr"
)

func TestValidateEmail(t *testing.T) {
	t.Parallel()
	local64 := strings.Repeat("a", 64)
	long := local64 + "@" + strings.Repeat("d", 63) + "." + strings.Repeat("e", 63) + "." + strings.Repeat("f", 57) + ".com"
	if len(long) != 254 {
		t.Fatalf("fixture is %d long", len(long))
	}
	for _, tc := range []struct {
		email string
		ok    bool
	}{
		{"a@example.com", true}, {"first.last+tag@sub.example.co.uk", true}, {local64 + "@example.com", true},
		{long, true}, {"a" + long, false}, {local64 + "a@example.com", false},
		{"", false}, {"plain", false}, {"a@", false}, {"@example.com", false}, {"a@example", false},
		{"a@example.", false}, {"Bob <bob@example.com>", false}, {" a@example.com", false},
		{"a@example.com ", false}, {"a b@example.com", false}, {"a@@example.com", false},
	} {
		if err := ValidateEmail(tc.email); (err == nil) != tc.ok {
			t.Errorf("ValidateEmail(%q) = %v, want ok=%v", tc.email, err, tc.ok)
		}
	}
}

func TestNormalizeTags(t *testing.T) {
	t.Parallel()
	got, err := NormalizeTags([]string{" Lead", "lead ", "VIP", "vip", "x", "LEAD"})
	if err != nil || strings.Join(got, ",") != "Lead,VIP,x" {
		t.Errorf("got %q %v", got, err)
	}
	_, err = NormalizeTags([]string{"ok", " ", "\t"})
	var ae *apperr.Error
	if !errors.As(err, &ae) || len(ae.Fields) != 2 || ae.Fields[0].Field != "body.tags.1" || ae.Fields[1].Field != "body.tags.2" {
		t.Errorf("blank tags: %v", err)
	}
	if got, err := NormalizeTags(nil); err != nil || got == nil || len(got) != 0 {
		t.Errorf("nil: %#v %v", got, err)
	}
	if _, err := NormalizeTags(make([]string, MaxTagsPerRequest+1)); err == nil {
		t.Error("over the per-request limit accepted")
	}
}

func TestTagOperations(t *testing.T) {
	t.Parallel()
	join := func(s []string) string { return strings.Join(s, ",") }
	existing := []string{"a", "B", "c"}
	add := addTags(existing, []string{"b", "D", "e"})
	if join(add.tags) != "a,B,c,D,e" || join(add.added) != "D,e" || len(add.removed) != 0 {
		t.Errorf("add: %+v", add)
	}
	if join(existing) != "a,B,c" {
		t.Errorf("add changed its input: %q", existing)
	}
	rep := replaceTags(existing, []string{"C", "d"})
	if join(rep.tags) != "C,d" || join(rep.added) != "d" || join(rep.removed) != "a,B" {
		t.Errorf("replace: %+v", rep)
	}
	rm := removeTags(existing, []string{"b", "z"})
	if join(rm.tags) != "a,c" || join(rm.removed) != "B" || len(rm.added) != 0 {
		t.Errorf("remove: %+v", rm)
	}
	if all := removeTags(existing, existing); all.tags == nil || len(all.tags) != 0 {
		t.Errorf("removing all: %#v", all.tags)
	}
}

func TestParseID(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"", "x", "01939d3c000070008000000000000000", "{01939d3c-0000-7000-8000-000000000000}",
		"urn:uuid:01939d3c-0000-7000-8000-000000000000", "01939d3c-0000-7000-8000-00000000000g"} {
		if _, err := ParseID(id); !errors.Is(err, ErrNotFound) {
			t.Errorf("ParseID(%q) = %v, want not found", id, err)
		}
	}
	if _, err := ParseID("01939d3c-0000-7000-8000-000000000000"); err != nil {
		t.Error(err)
	}
}
