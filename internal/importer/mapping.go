package importer

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/contactd/contactd/internal/csvcell"
)

// Fields are the contact fields a CSV column can fill, as the API names them (crmFields'
// members with a "crm." prefix).
var Fields = []string{"email", "name", "firstName", "lastName", "phone", "tags", "address",
	"assignedUserEmailId", "crm.name", "crm.url", "crm.source", "crm.stage", "crm.createdDate"}

// headerNames are the header spellings (lower case, letters and digits only) each field is
// found under when --map does not name its column: what CRM exports commonly call them.
var headerNames = map[string][]string{
	"email":               {"email", "emailaddress", "email1", "emailid", "mail", "primaryemail", "workemail"},
	"name":                {"name", "fullname", "contactname"},
	"firstName":           {"firstname", "first", "givenname"},
	"lastName":            {"lastname", "last", "surname", "familyname"},
	"phone":               {"phone", "phonenumber", "mobile", "mobilephone", "mobilephonenumber", "telephone", "tel", "workphone"},
	"tags":                {"tags", "tag", "labels", "label", "lists"},
	"address":             {"address", "streetaddress", "mailingaddress", "fulladdress", "postaladdress"},
	"assignedUserEmailId": {"assigneduseremailid", "assigneduseremail", "owner", "owneremail", "contactowner", "assignedto"},
	// CRM fields only under unambiguous names: a column named Status or Created in another
	// system's export means something else, and a date in another format would refuse rows.
	"crm.name":        {"crmname"},
	"crm.url":         {"crmurl", "crmrecordurl"},
	"crm.source":      {"crmsource", "leadsource"},
	"crm.stage":       {"crmstage", "lifecyclestage"},
	"crm.createdDate": {"crmcreateddate"},
}

// ParseMap reads --map: field=Column pairs separated by commas; a column with commas or
// spaces may be quoted (name="Full Name").
func ParseMap(s string) (map[string]string, error) {
	out := map[string]string{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	var pairs []string
	var cur strings.Builder
	quoted := false
	for _, r := range s {
		switch {
		case r == '"':
			quoted = !quoted
		case r == ',' && !quoted:
			pairs, cur = append(pairs, cur.String()), strings.Builder{}
		default:
			cur.WriteRune(r)
		}
	}
	if quoted {
		return nil, fmt.Errorf("--map: unbalanced quote in %q", s)
	}
	pairs = append(pairs, cur.String())
	for _, p := range pairs {
		field, column, ok := strings.Cut(p, "=")
		field, column = strings.TrimSpace(field), strings.TrimSpace(column)
		if !ok || column == "" {
			return nil, fmt.Errorf("--map: %q is not field=Column", p)
		}
		if !slices.Contains(Fields, field) && !strings.HasPrefix(field, customPrefix) {
			return nil, fmt.Errorf("--map: unknown field %q (fields: %s)", field, strings.Join(Fields, ", "))
		}
		out[field] = column
	}
	return out, nil
}

// columns decides which column fills each field: the --map choice, else the first header
// whose normalised spelling is one of the field's usual names. An explicit column that the
// header lacks is an error.
func columns(header []string, explicit map[string]string, fieldTypes map[string]string) (map[string]int, error) {
	at := map[string]int{}
	for field := range explicit {
		if key, ok := strings.CutPrefix(field, customPrefix); ok && fieldTypes[key] == "" {
			return nil, fmt.Errorf("--map %s: the account has no custom field %q", field, key)
		}
	}
	for i, h := range header { // as the CSV export names them
		if key, ok := strings.CutPrefix(strings.TrimSpace(h), customPrefix); ok && fieldTypes[key] != "" {
			if _, mapped := explicit[customPrefix+key]; !mapped {
				at[customPrefix+key] = i
			}
		}
	}
	for field, column := range explicit {
		i := slices.IndexFunc(header, func(h string) bool { return strings.EqualFold(strings.TrimSpace(h), column) })
		if i < 0 {
			return nil, fmt.Errorf("--map %s=%s: the header has no column %q (it has: %s)", field, column, column, strings.Join(header, ", "))
		}
		at[field] = i
	}
	for _, field := range Fields {
		if _, ok := at[field]; ok {
			continue
		}
		for i, h := range header {
			if slices.Contains(headerNames[field], normalise(h)) && !slices.Contains(mapValues(at), i) {
				at[field] = i
				break
			}
		}
	}
	if _, ok := at["email"]; !ok {
		return nil, fmt.Errorf("no email column among %s: name it with --map email=COLUMN", strings.Join(header, ", "))
	}
	return at, nil
}

func mapValues(m map[string]int) []int {
	out := make([]int, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func normalise(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// customPrefix names a custom field's column: customFields.KEY.
const customPrefix = "customFields."

// customValue is a custom field's cell as the value its type takes: a number or a boolean
// when it reads as one (else the text, which the field then refuses with its rule), a
// multiEnum's options split on ';' (as the export joins them).
func customValue(typ, cell string) any {
	switch typ {
	case "number":
		if n, err := strconv.ParseFloat(cell, 64); err == nil {
			return n
		}
	case "boolean":
		if b, err := strconv.ParseBool(cell); err == nil {
			return b
		}
	case "multiEnum":
		var options []string
		for _, o := range strings.Split(cell, ";") {
			if o = strings.TrimSpace(o); o != "" {
				options = append(options, o)
			}
		}
		return options
	}
	return cell
}

// item is the contact a CSV row describes, in the API's CreateContactRequest shape: empty
// cells are absent, tags split on ';' or ',', first and last names joined when there is no
// name column.
func item(row []string, at map[string]int, fieldTypes map[string]string) map[string]any {
	cell := func(field string) string {
		if i, ok := at[field]; ok && i < len(row) {
			return strings.TrimSpace(csvcell.Restore(row[i])) // an export of ours quoted formulas
		}
		return ""
	}
	out := map[string]any{"email": cell("email")}
	name := cell("name")
	if name == "" {
		name = strings.TrimSpace(cell("firstName") + " " + cell("lastName"))
	}
	for k, v := range map[string]string{"name": name, "phone": cell("phone"), "address": cell("address"),
		"assignedUserEmailId": cell("assignedUserEmailId")} {
		if v != "" {
			out[k] = v
		}
	}
	if t := cell("tags"); t != "" {
		tags := strings.FieldsFunc(t, func(r rune) bool { return r == ';' || r == ',' || r == '|' })
		for i := range tags {
			tags[i] = strings.TrimSpace(tags[i])
		}
		out["tags"] = slices.DeleteFunc(tags, func(s string) bool { return s == "" })
	}
	crm := map[string]any{}
	for _, f := range []string{"name", "url", "source", "stage", "createdDate"} {
		if v := cell("crm." + f); v != "" {
			crm[f] = v
		}
	}
	if len(crm) > 0 {
		out["crmFields"] = crm
	}
	custom := map[string]any{}
	for field := range at {
		if key, ok := strings.CutPrefix(field, customPrefix); ok {
			if v := cell(field); v != "" { // an empty cell leaves the value as it is
				custom[key] = customValue(fieldTypes[key], v)
			}
		}
	}
	if len(custom) > 0 {
		out["customFields"] = custom
	}
	return out
}
