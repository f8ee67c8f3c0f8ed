package main

import (
	"context"
	"encoding/json"
	"fmt"
)

// benchFields are the 20 custom fields the create-fields workload writes, of the types an
// account mixes (none unique: a unique value's claim is a cost of its own, in the cost model).
var benchFields = []map[string]any{
	{"key": "plan", "type": "enum", "options": []map[string]string{{"value": "free", "label": "Free"}, {"value": "pro", "label": "Pro"}}},
	{"key": "channels", "type": "multiEnum", "options": []map[string]string{{"value": "sms", "label": "SMS"}, {"value": "mail", "label": "Mail"}}},
	{"key": "seats", "type": "number"}, {"key": "score", "type": "number"}, {"key": "budget", "type": "number"}, {"key": "visits", "type": "number"},
	{"key": "vip", "type": "boolean"}, {"key": "churned", "type": "boolean"},
	{"key": "renewal", "type": "date"}, {"key": "last_call", "type": "datetime"},
	{"key": "work_email", "type": "email"}, {"key": "mobile", "type": "phone"}, {"key": "site", "type": "url"},
	{"key": "company", "type": "text"}, {"key": "title", "type": "text"}, {"key": "source", "type": "text"}, {"key": "region", "type": "text"},
	{"key": "industry", "type": "text"}, {"key": "notes", "type": "text"}, {"key": "referrer", "type": "text"},
}

// defineBenchFields defines benchFields in the workloads' account.
func defineBenchFields(ctx context.Context, dr *driver, base string) error {
	for _, f := range benchFields {
		f["label"] = f["key"]
		body, err := json.Marshal(f)
		if err != nil {
			return err
		}
		if err := dr.do(ctx, request{method: "POST", url: base + "/public/v1/fields", body: body, want: 200}); err != nil {
			return fmt.Errorf("define the bench field %s: %w", f["key"], err)
		}
	}
	return nil
}

// benchFieldValues is a customFields object with a value for each of benchFields.
func benchFieldValues(i int) []byte {
	return fmt.Appendf(nil, `{"plan":"pro","channels":["mail","sms"],"seats":%d,"score":%d.5,"budget":12000,"visits":%d,`+
		`"vip":true,"churned":false,"renewal":"2027-03-01","last_call":"2026-11-27T09:30:00.000Z",`+
		`"work_email":"person%d@corp.example","mobile":"+1 555 010 %04d","site":"https://example.com/%d",`+
		`"company":"Example Corp %d","title":"Head of Operations","source":"Website","region":"Midwest",`+
		`"industry":"Real estate","notes":"Met at the open house; wants a follow-up in March.","referrer":"partner-%d"}`,
		i%50, i%100, i, i, i, i, i, i)
}
