package csvcell

import "testing"

func TestNeutralize(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"Ann Lee":                        "Ann Lee",
		"":                               "",
		"=HYPERLINK(\"http://x\",\"y\")": "'=HYPERLINK(\"http://x\",\"y\")",
		"+cmd|' /C calc'!A0":             "'+cmd|' /C calc'!A0",
		"-2+3+cmd|' /C calc'!A0":         "'-2+3+cmd|' /C calc'!A0",
		"@SUM(A1:A9)":                    "'@SUM(A1:A9)",
		"\t=1":                           "'\t=1",
		"\r=1":                           "'\r=1",
		"+1 (415) 555-0100":              "+1 (415) 555-0100",
		"-3":                             "-3",
		"-":                              "'-",
		"+A1":                            "'+A1",
		"a=b":                            "a=b",
		"'=1":                            "''=1",
		"'+1 415":                        "'+1 415",
		"'plain":                         "'plain",
	} {
		got := Neutralize(in)
		if got != want {
			t.Errorf("Neutralize(%q) = %q, want %q", in, got, want)
		}
		if back := Restore(got); back != in {
			t.Errorf("Restore(Neutralize(%q)) = %q", in, back)
		}
	}
}

func FuzzRoundTrip(f *testing.F) {
	for _, s := range []string{"=1", "''@x", "+1 2", "'", "-", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if back := Restore(Neutralize(s)); back != s {
			t.Errorf("Restore(Neutralize(%q)) = %q", s, back)
		}
		if n := Neutralize(s); n != "" && n[0] != '\'' && needsQuote(n) {
			t.Errorf("Neutralize(%q) = %q still reads as a formula", s, n)
		}
	})
}
