package importer

import (
	"bytes"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestParseMap(t *testing.T) {
	got, err := ParseMap(`email=E-mail, name="Full, Name",crm.stage=Stage`)
	if err != nil || got["email"] != "E-mail" || got["name"] != "Full, Name" || got["crm.stage"] != "Stage" || len(got) != 3 {
		t.Errorf("%v %v", got, err)
	}
	for _, bad := range []string{`color=Red`, `email`, `email=`, `name="Full`} {
		if _, err := ParseMap(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestColumnsAndItems(t *testing.T) {
	at, err := columns([]string{"First Name", "Last Name", "E-Mail", "Mobile", "Labels", "Status"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	it := item([]string{"Ann", "Lee", " ann@example.com ", "", "a; b ,|c", "Active"}, at, nil)
	if it["email"] != "ann@example.com" || it["name"] != "Ann Lee" || it["phone"] != nil ||
		strings.Join(it["tags"].([]string), ",") != "a,b,c" || it["crmFields"] != nil {
		t.Errorf("item %v", it)
	}
	// an export of ours quoted cells that would run as formulas: the quote comes off
	it = item([]string{"'=Ann", "Lee", "ann@example.com", "'+1 415", "'-x", ""}, at, nil)
	if it["name"] != "=Ann Lee" || it["phone"] != "'+1 415" || strings.Join(it["tags"].([]string), ",") != "-x" {
		t.Errorf("quoted cells: %v", it)
	}
	if _, err := columns([]string{"Name"}, nil, nil); err == nil || !strings.Contains(err.Error(), "no email column") {
		t.Errorf("no email column: %v", err)
	}
	if _, err := columns([]string{"Email"}, map[string]string{"name": "Who"}, nil); err == nil || !strings.Contains(err.Error(), `no column "Who"`) {
		t.Errorf("a mapped column the header lacks: %v", err)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Off a terminal, progress is a plain line every few seconds: share of the file, rows, rate,
// rejects and the time left.
func TestPlainProgress(t *testing.T) {
	plainEvery = 20 * time.Millisecond
	var out syncBuffer
	var read atomic.Int64
	read.Store(250)
	p := newProgress(&out, false, 1000, &read, func() Summary { return Summary{Rows: 40, Rejected: 2} })
	// two lines written, however long the machine takes to write them (the bound is a guard)
	for deadline := time.Now().Add(3 * time.Minute); strings.Count(out.String(), "\n") < 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("fewer than two progress lines")
		}
	}
	p.stop()
	line := regexp.MustCompile(`^import: 25% of the file, 40 rows \(\d+ rows/s\), 2 rejected, about \S+ left$`)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) < 2 || !line.MatchString(lines[0]) {
		t.Errorf("progress lines: %q", lines)
	}
}

// Columns named customFields.KEY, as the CSV export writes them, or mapped to one, fill the
// account's custom fields, each cell read as its field's type; an unknown field's column is
// left alone, and --map naming one is an error.
func TestCustomFieldColumns(t *testing.T) {
	types := map[string]string{"seats": "number", "vip": "boolean", "channels": "multiEnum", "note": "text"}
	header := []string{"Email", "customFields.seats", "customFields.vip", "customFields.channels", "Remark", "customFields.nope"}
	at, err := columns(header, map[string]string{"customFields.note": "Remark"}, types)
	if err != nil {
		t.Fatal(err)
	}
	it := item([]string{"a@example.com", "12.5", "true", "sms; mail", "'=hi", "x"}, at, types)
	want := map[string]any{"seats": 12.5, "vip": true, "channels": []string{"sms", "mail"}, "note": "=hi"}
	if !reflect.DeepEqual(it["customFields"], want) {
		t.Errorf("customFields %#v, want %#v", it["customFields"], want)
	}
	if it = item([]string{"b@example.com", "many", "", "", "", ""}, at, types); !reflect.DeepEqual(it["customFields"], map[string]any{"seats": "many"}) {
		t.Errorf("a cell that is no number, empty cells: %#v", it["customFields"])
	}
	if _, err := columns(header, map[string]string{"customFields.nope": "Remark"}, types); err == nil || !strings.Contains(err.Error(), `no custom field "nope"`) {
		t.Errorf("--map of a field the account lacks: %v", err)
	}
}
