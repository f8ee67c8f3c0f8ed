package testkit

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// The segment oracle decides membership apart from the product: it reads a stored filter as
// docs/api.md describes it and translates it into SQL over the stored rows (contacts, their
// properties, their custom field values), which PostgreSQL evaluates. It shares no code with
// internal/segment: a wrong matcher there cannot be wrong here in the same way.
//
// Every value an attribute holds is a jsonb row (none when it has no value): a text is equal
// to an operand whatever its case, a number or a boolean by value; an order compares numbers,
// and texts (times as their fixed-width UTC text to the millisecond) byte by byte. A negation
// is the opposite of its positive over the whole contact.

type oracleFilter struct {
	Groups []struct {
		Conditions []oracleCondition `json:"conditions"`
	} `json:"groups"`
}

type oracleCondition struct {
	Attribute string            `json:"attribute"`
	Operator  string            `json:"operator"`
	Value     json.RawMessage   `json:"value"`
	Values    []json.RawMessage `json:"values"`
}

// oracleSQL is the query of the contacts of account $1 that filter (a stored segment filter)
// selects, and its arguments after the account.
func oracleSQL(filter []byte) (string, []any, error) {
	var f oracleFilter
	if err := json.Unmarshal(filter, &f); err != nil {
		return "", nil, err
	}
	b := &oracleBuilder{}
	var groups []string
	for _, g := range f.Groups {
		var conds []string
		for _, c := range g.Conditions {
			s, err := b.condition(c)
			if err != nil {
				return "", nil, err
			}
			conds = append(conds, "("+s+")")
		}
		groups = append(groups, "("+strings.Join(conds, " AND ")+")")
	}
	if len(groups) == 0 {
		return "", nil, fmt.Errorf("a filter without groups")
	}
	return "SELECT c.contact_id FROM contacts c WHERE c.account_id = $1 AND (" + strings.Join(groups, " OR ") + ")", b.args, nil
}

type oracleBuilder struct{ args []any }

func (b *oracleBuilder) arg(v any) string {
	b.args = append(b.args, v)
	return fmt.Sprintf("$%d", len(b.args)+1)
}

var oracleNegations = map[string]string{"neq": "eq", "notIn": "in", "notContains": "contains", "notExists": "exists"}

var oracleOrders = map[string]string{"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}

func (b *oracleBuilder) condition(c oracleCondition) (string, error) {
	if positive, ok := oracleNegations[c.Operator]; ok {
		c.Operator = positive
		s, err := b.condition(c)
		return "NOT (" + s + ")", err
	}
	values, err := oracleValues(c.Attribute)
	if err != nil {
		return "", err
	}
	if c.Operator == "exists" {
		if key, ok := strings.CutPrefix(c.Attribute, "customFields."); ok { // an empty list is a value
			return fmt.Sprintf("coalesce(jsonb_typeof(c.custom_fields -> %s), 'null') <> 'null'", b.arg(key)), nil
		}
		return "EXISTS (" + values + ")", nil
	}
	operands := c.Values
	if c.Value != nil {
		operands = []json.RawMessage{c.Value}
	}
	raw, err := json.Marshal(operands)
	if err != nil {
		return "", err
	}
	o := b.arg(string(raw)) + "::jsonb"
	var test string
	switch c.Operator {
	case "eq", "in", "contains":
		test = fmt.Sprintf(`EXISTS (SELECT 1 FROM jsonb_array_elements(%s) op WHERE
			(jsonb_typeof(v) = 'string' AND jsonb_typeof(op) = 'string'
			 AND lower((v #>> '{}') COLLATE "und-x-icu") = lower((op #>> '{}') COLLATE "und-x-icu"))
			OR (jsonb_typeof(v) IN ('number', 'boolean') AND v = op))`, o)
	default:
		cmp, ok := oracleOrders[c.Operator]
		if !ok || len(operands) != 1 {
			return "", fmt.Errorf("operator %q with %d operands", c.Operator, len(operands))
		}
		test = fmt.Sprintf(`CASE
			WHEN jsonb_typeof(v) = 'number' AND jsonb_typeof(%[1]s -> 0) = 'number' THEN (v #>> '{}')::numeric %[2]s (%[1]s ->> 0)::numeric
			WHEN jsonb_typeof(v) = 'string' AND jsonb_typeof(%[1]s -> 0) = 'string' THEN (v #>> '{}') COLLATE "C" %[2]s (%[1]s ->> 0)
			ELSE false END`, o, cmp)
	}
	return "EXISTS (SELECT 1 FROM (" + values + ") x(v) WHERE " + test + ")", nil
}

// oracleColumns are the contact's own attributes that are a column of it.
var oracleColumns = map[string]string{
	"email": "c.email", "name": "c.name", "phone": "c.phone", "assignedUserEmailId": "c.assigned_user_email_id",
	"emailStatus": "c.email_status", "recordStatus": "c.record_status",
	"engagement.numOfAIHandoffs": "c.num_ai_handoffs", "engagement.numOfDashboardClicks": "c.num_dashboard_clicks",
	"engagement.numOfDashboardViews": "c.num_dashboard_views", "engagement.numOfEmailClicks": "c.num_email_clicks",
	"engagement.numOfEmailOpens": "c.num_email_opens", "engagement.numOfEmailSends": "c.num_email_sends",
	"engagement.numOfFormSubmissions": "c.num_form_submissions", "engagement.numOfPostcardScans": "c.num_postcard_scans",
}

var oracleTimes = map[string]string{
	"createdAt": "c.created_at", "updatedAt": "c.updated_at",
	"engagement.lastAIHandoffDate": "c.last_ai_handoff_at", "engagement.lastDashboardClickedDate": "c.last_dashboard_click_at",
	"engagement.lastDashboardViewedDate": "c.last_dashboard_view_at", "engagement.lastEmailClickDate": "c.last_email_click_at",
	"engagement.lastEmailOpenDate": "c.last_email_open_at", "engagement.lastEmailSentDate": "c.last_email_send_at",
	"engagement.lastFormSubmissionDate": "c.last_form_submission_at", "engagement.lastPostcardScanDate": "c.last_postcard_scan_at",
}

var oracleAddressParts = map[string]string{"streetAddress": "street_address", "city": "city", "county": "county", "state": "state", "zip": "zip"}

// oracleLeadScore is docs/api.md's lead score, decayed to now:
// round(100 x (1 - e^(-points/30))), points the sum over activity types of
// weight x log2(1 + count) x 0.5^(days since the last / 30).
const oracleLeadScore = `(SELECT greatest(0, least(100, round((100 * (1 - exp(-coalesce(sum(
	w * (ln(1 + n) / ln(2)) * CASE WHEN last IS NOT NULL AND now() > last
		THEN power(0.5, extract(epoch FROM now() - last)::float8 / (30 * 86400)) ELSE 1 END), 0) / 30.0)))::numeric)))
	FROM (VALUES (10, c.num_form_submissions, c.last_form_submission_at), (8, c.num_ai_handoffs, c.last_ai_handoff_at),
		(6, c.num_postcard_scans, c.last_postcard_scan_at), (5, c.num_email_clicks, c.last_email_click_at),
		(4, c.num_dashboard_clicks, c.last_dashboard_click_at), (2, c.num_dashboard_views, c.last_dashboard_view_at),
		(1, c.num_email_opens, c.last_email_open_at)) s(w, n, last) WHERE n > 0)`

// oracleValues is a query of the jsonb values attr holds for the contact c.
func oracleValues(attr string) (string, error) {
	if col, ok := oracleColumns[attr]; ok {
		return fmt.Sprintf("SELECT to_jsonb(%[1]s) WHERE coalesce(%[1]s::text, '') <> ''", col), nil
	}
	if col, ok := oracleTimes[attr]; ok {
		return fmt.Sprintf(`SELECT to_jsonb(to_char(%[1]s AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) WHERE %[1]s IS NOT NULL`, col), nil
	}
	if part, ok := strings.CutPrefix(attr, "address."); ok {
		col, ok := oracleAddressParts[part]
		if !ok {
			return "", fmt.Errorf("no address part %q", part)
		}
		return fmt.Sprintf(`SELECT to_jsonb(p.%[1]s) FROM properties p
			WHERE p.account_id = c.account_id AND p.contact_id = c.contact_id AND p.archived_at IS NULL AND p.%[1]s <> ''`, col), nil
	}
	if key, ok := strings.CutPrefix(attr, "customFields."); ok {
		v := "(c.custom_fields -> " + pgQuote(key) + ")"
		return fmt.Sprintf(`SELECT e FROM jsonb_array_elements(CASE jsonb_typeof(%[1]s) WHEN 'array' THEN %[1]s ELSE jsonb_build_array(%[1]s) END) e
			WHERE coalesce(jsonb_typeof(%[1]s), 'null') <> 'null'`, v), nil
	}
	switch attr {
	case "tags":
		return "SELECT to_jsonb(t) FROM unnest(c.tags) t", nil
	case "leadScore":
		return "SELECT to_jsonb(" + oracleLeadScore + ")", nil
	}
	return "", fmt.Errorf("no attribute %q", attr)
}

// pgQuote is s as an SQL string literal (standard_conforming_strings).
func pgQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// OracleQuerier is what the oracle reads through: a transaction, to read in one snapshot.
type OracleQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// SegmentOracle is the contacts of account that filter (a stored segment filter) selects, by
// the oracle, read on q.
func SegmentOracle(ctx context.Context, q OracleQuerier, account uuid.UUID, filter []byte) (map[uuid.UUID]bool, error) {
	query, args, err := oracleSQL(filter)
	if err != nil {
		return nil, err
	}
	rows, err := q.Query(ctx, query, append([]any{account}, args...)...)
	if err != nil {
		return nil, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, err
	}
	out := make(map[uuid.UUID]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out, nil
}
