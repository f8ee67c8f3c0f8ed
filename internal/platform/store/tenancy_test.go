package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/contactd/contactd/internal/testkit"
)

// crossAccount are the queries in sql/queries that do not confine themselves to one account,
// and why. On a database sharded by account (docs/operations.md#many-nodes) each of these
// runs on every shard; every other query runs on the one shard of its account.
var crossAccount = map[string]string{
	"AccountGetByName":           "operator command: an account by its name",
	"KeyListByAccount":           "operator command: an account's keys, by the account's name",
	"KeyRevokeByPrefix":          "operator command: revoke a key by its prefix",
	"KeyExpireByPrefix":          "operator command: set a key's expiry by its prefix",
	"KeyAuthenticate":            "authentication: the key, found by its hash, names its account",
	"ConsentGetByToken":          "the public consent page: the token names its account",
	"DeliveryClaim":              "workers claim due deliveries of every account",
	"EnrichLockDue":              "workers claim due contacts of every account",
	"EventsPrune":                "retention: prunes old events of every account",
	"DeliveriesPrune":            "retention: prunes old deliveries of every account",
	"DeliveriesOrphanedFail":     "retention: fails pending deliveries of every account whose event was pruned",
	"IdempotencyPrune":           "retention: prunes expired Idempotency-Keys of every account",
	"SubscriptionsSweepFailing":  "maintenance: removes subscriptions Failing for 5 days, in every account",
	"SecretKeyIDs":               "start-up check: the key ids sealing every stored secret",
	"AccountSecretsToSeal":       "start-up: client secrets an older version stored in clear, in every account",
	"IdempotencyBodiesToReseal":  "secrets rekey: stored responses not sealed under the current key, in every account",
	"SubscriptionSecretsToSeal":  "start-up: signing secrets an older version stored in clear, in every account",
	"EnrichLease":                "workers lease the contacts they claimed, of any account, in one statement",
	"EnrichFinishMany":           "workers record the enrichment of contacts of any account in one statement",
	"ConsoleSessionGet":          "the console: the session token names its account",
	"ConsoleSessionDelete":       "the console's sign-out, by the session token",
	"ConsoleSessionPrune":        "maintenance: deletes ended console sessions of every account",
	"SubscriptionsCountFiltered": "the filter tally: a process adds its counts for every account's subscriptions in one statement",
	"SegmentBackfillClaim":       "a process claims a segment of any account to backfill",
}

// TestEveryQueryIsConfinedToAnAccount plans every query sqlc generated from sql/queries (a
// generic plan, so parameters stay parameters) and checks that each scan of a table keyed by
// account is restricted by account_id — by a parameter, or by a join on account_id in a plan
// where some account_id is a parameter — and that a function of ours a query calls takes the
// account (a plan does not show a function's insides: TestOurFunctionsAreConfinedToTheirAccount
// plans those). The queries that are not confined are exactly crossAccount.
func TestEveryQueryIsConfinedToAnAccount(t *testing.T) {
	t.Parallel()
	conn, keyed, ours := planner(t)

	queries := generatedQueries(t)
	if len(queries) < 50 {
		t.Fatalf("found %d queries in gen/db", len(queries))
	}
	var unconfined []string
	for i, name := range sortedKeys(queries) {
		sql := queries[name]
		root, out, err := genericPlan(conn, fmt.Sprintf("q%d", i), sql, nil)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		var why []string
		for _, u := range unconfinedScans(root, "", keyed, ours) {
			why = append(why, u.String())
		}
		if len(why) == 0 && !paramAccount.Match(out) && joinsOnly(root, keyed) {
			why = append(why, "joined on account_id, but no account_id is a parameter")
		}
		if len(why) > 0 {
			unconfined = append(unconfined, name)
			if _, listed := crossAccount[name]; !listed {
				t.Errorf("%s reaches beyond one account: %s\n%s", name, strings.Join(why, "; "), sql)
			}
		}
	}
	for name := range crossAccount {
		if _, ok := queries[name]; !ok {
			t.Errorf("crossAccount lists %s, which is not a query", name)
		} else if !strings.Contains(" "+strings.Join(unconfined, " ")+" ", " "+name+" ") {
			t.Errorf("crossAccount lists %s, which is confined to one account: take it off the list", name)
		}
	}
	t.Logf("%d queries, %d confined to one account, %d across accounts", len(queries), len(queries)-len(unconfined), len(unconfined))
	page, err := os.ReadFile("../../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	if claim := fmt.Sprintf("%d of the %d queries", len(queries)-len(unconfined), len(queries)); !strings.Contains(string(page), claim) {
		t.Errorf("docs/operations.md should say %q (the Citus paragraph)", claim)
	}
}

// catalog reads the tables keyed by account, and our functions with whether each takes the
// account it works in (a parameter named p_account or account).
func catalog(t *testing.T, conn *pgx.Conn) (keyed, ours map[string]bool) {
	t.Helper()
	ctx := context.Background()
	keyed, ours = map[string]bool{}, map[string]bool{}
	rows, _ := conn.Query(ctx, `SELECT table_name FROM information_schema.columns
		WHERE table_schema = 'public' AND column_name = 'account_id'`)
	var name string
	if _, err := pgx.ForEachRow(rows, []any{&name}, func() error { keyed[name] = true; return nil }); err != nil {
		t.Fatal(err)
	}
	var takesAccount bool
	rows, _ = conn.Query(ctx, `SELECT proname, coalesce('p_account' = ANY (proargnames) OR 'account' = ANY (proargnames), false)
		FROM pg_proc p WHERE pronamespace = 'public'::regnamespace
		  AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')`)
	if _, err := pgx.ForEachRow(rows, []any{&name, &takesAccount}, func() error { ours[name] = takesAccount; return nil }); err != nil {
		t.Fatal(err)
	}
	return keyed, ours
}

// planner is a connection to a fresh migrated database that plans generically, and its catalog.
func planner(t *testing.T) (conn *pgx.Conn, keyed, ours map[string]bool) {
	t.Helper()
	conn = connect(t)
	keyed, ours = catalog(t, conn)
	if _, err := conn.Exec(context.Background(), "SET plan_cache_mode = force_generic_plan"); err != nil {
		t.Fatal(err)
	}
	return conn, keyed, ours
}

// genericPlan prepares sql as stmt (with the parameter types given, or inferred) and explains
// its generic plan, so that parameters stay parameters in the conditions it shows.
func genericPlan(conn *pgx.Conn, stmt, sql string, types []string) (scanNode, []byte, error) {
	ctx := context.Background()
	prepare := "PREPARE " + stmt
	if len(types) > 0 {
		prepare += "(" + strings.Join(types, ", ") + ")"
	}
	if _, err := conn.Exec(ctx, prepare+" AS "+sql); err != nil {
		return scanNode{}, nil, fmt.Errorf("prepare: %w", err)
	}
	args := strings.TrimSuffix(strings.Repeat("NULL,", max(len(types), maxParam(sql))), ",")
	call := "EXECUTE " + stmt
	if args != "" {
		call += "(" + args + ")"
	}
	var out []byte
	if err := conn.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+call).Scan(&out); err != nil {
		return scanNode{}, nil, fmt.Errorf("explain: %w", err)
	}
	var root []struct{ Plan scanNode }
	if err := json.Unmarshal(out, &root); err != nil {
		return scanNode{}, nil, err
	}
	return root[0].Plan, out, nil
}

// accountFree are our functions that take no account, and why each may.
var accountFree = map[string]string{
	"accounts_delete_data":         "the trigger that deletes a deleted account's rows: its own account, by OLD.account_id",
	"webhook_deliveries_gone":      "the trigger that deletes the attempts of the deliveries its statement deleted, by their own keys",
	"webhook_attempts_of_delivery": "the trigger that fills an attempt's event and subscription from its own delivery, by the attempt's account and key",
	"lower_tags":                   "pure: reads no table",
	"name_words":                   "pure: reads no table",
	"contact_phone_key":            "pure: reads no table",
	"contact_email_canon":          "pure: reads no table",
	"uuid_v7":                      "makes an id: reads no table",
	"webhook_filter_matches":       "pure: a subscription's filter on a payload, reads no table",
}

// acrossInside are the scans inside our account-taking functions that reach beyond the
// account on purpose: "function: table alias" and why.
var acrossInside = map[string]string{}

// TestOurFunctionsAreConfinedToTheirAccount plans each statement of each function of ours that
// takes the account, its parameters and variables as parameters, with the check queries get:
// every scan of a table keyed by account restricted by the account parameter or by a row
// joined on account_id, except acrossInside. (Rows a body inserts are not scanned: a plan
// cannot show whose they are.) The functions that take no account are exactly accountFree.
func TestOurFunctionsAreConfinedToTheirAccount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn, keyed, ours := planner(t)
	for name, takesAccount := range ours {
		if _, free := accountFree[name]; free == takesAccount {
			t.Errorf("%s takes an account: %v; accountFree lists it: %v", name, takesAccount, free)
		}
	}
	rows, _ := conn.Query(ctx, `SELECT p.proname, l.lanname, p.prosrc,
			array(SELECT format_type(a, NULL) FROM unnest(p.proargtypes) a),
			coalesce((p.proargnames)[1:p.pronargs], '{}')
		FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
		WHERE p.pronamespace = 'public'::regnamespace
		  AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')
		ORDER BY 1`)
	type function struct {
		name, lang, src string
		types, args     []string
	}
	fns, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (f function, err error) {
		return f, r.Scan(&f.name, &f.lang, &f.src, &f.types, &f.args)
	})
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	var planned []string
	for i, f := range fns {
		if !ours[f.name] {
			continue
		}
		statements, variables, err := []string{f.src}, map[string]string{}, error(nil)
		if f.lang == "plpgsql" {
			statements, variables, err = plpgsqlStatements(f.src)
			if err != nil {
				t.Errorf("%s: %v", f.name, err)
				continue
			}
		}
		names, types := append([]string{}, f.args...), append([]string{}, f.types...)
		for v, typ := range variables {
			names, types = append(names, v), append(types, typ)
		}
		account := slices.IndexFunc(names, func(n string) bool { return n == "p_account" || n == "account" }) + 1
		for j, statement := range statements {
			for k, name := range names { // each parameter and variable by its position
				statement = regexp.MustCompile(`\b`+regexp.QuoteMeta(name)+`\b`).ReplaceAllString(statement, fmt.Sprintf("$$%d", k+1))
			}
			root, out, err := genericPlan(conn, fmt.Sprintf("f%d_%d", i, j), statement, types)
			if err != nil {
				t.Errorf("%s: %v\n%s", f.name, err, statement)
				continue
			}
			var why []string
			for _, w := range unconfinedScans(root, "", keyed, ours) {
				if scan := f.name + ": " + w.scanned; acrossInside[scan] != "" {
					used[scan] = true
				} else {
					why = append(why, w.String())
				}
			}
			if joinsOnly(root, keyed) && !regexp.MustCompile(fmt.Sprintf(`account_id = \$%d\b`, account)).Match(out) {
				why = append(why, fmt.Sprintf("no scan restricted by the account parameter ($%d)", account))
			}
			if len(why) > 0 {
				t.Errorf("%s reaches beyond its account: %s\n%s", f.name, strings.Join(why, "; "), statement)
			}
			planned = append(planned, fmt.Sprintf("%s#%d", f.name, j+1))
		}
	}
	for scan := range acrossInside {
		if !used[scan] {
			t.Errorf("acrossInside lists %q, which no function scans unconfined: take it off the list", scan)
		}
	}
	t.Logf("planned %v", planned)
	for name, takesAccount := range ours {
		if takesAccount && !slices.ContainsFunc(planned, func(p string) bool { return strings.HasPrefix(p, name+"#") }) {
			t.Errorf("%s takes the account and none of its statements was planned (planned: %v)", name, planned)
		}
	}
}

// plpgsqlStatements reads the SQL statements of a plpgsql body written as ours are: an optional
// DECLARE of one variable a line, then statements ending in ";" (SELECT ... INTO, PERFORM,
// RETURN QUERY, the DML) and control flow (IF ... THEN, RETURN, RETURN of an expression
// without a query, END IF), which runs no SQL of its own here. A body it cannot read is an error, not a pass.
func plpgsqlStatements(src string) (statements []string, variables map[string]string, err error) {
	src = regexp.MustCompile(`--[^\n]*`).ReplaceAllString(src, "")
	m := regexp.MustCompile(`(?is)^\s*(#variable_conflict\s+\w+\s+)?(DECLARE\s+(.*?))?\bBEGIN\b(.*)\bEND\s*;?\s*$`).FindStringSubmatch(src)
	if m == nil {
		return nil, nil, errors.New("a body not of DECLARE ... BEGIN ... END")
	}
	variables = map[string]string{}
	for _, decl := range strings.Split(m[3], ";") {
		if f := strings.Fields(decl); len(f) == 2 {
			variables[f[0]] = f[1]
		} else if len(f) != 0 {
			return nil, nil, fmt.Errorf("a declaration not of one name and one type: %q", decl)
		}
	}
	into := regexp.MustCompile(`(?is)^(SELECT\b.*?)\bINTO\s+\w+(\s*,\s*\w+)*\s+(FROM\b.*)$`)
	for _, st := range strings.Split(m[4], ";") {
		st = strings.TrimSpace(st)
		upper := strings.ToUpper(st)
		switch {
		case st == "", upper == "RETURN", strings.HasPrefix(upper, "END IF"):
		case strings.HasPrefix(upper, "RETURN ") && !strings.HasPrefix(upper, "RETURN QUERY") && !strings.Contains(upper, "SELECT"):
			// an expression of the parameters and variables: no SQL of its own
		case strings.HasPrefix(upper, "IF "):
			if !strings.HasSuffix(upper, "RETURN") || strings.Contains(upper, "SELECT") {
				return nil, nil, fmt.Errorf("an IF that runs more than its condition's functions: %q", st)
			}
		case strings.HasPrefix(upper, "RETURN QUERY"):
			statements = append(statements, st[len("RETURN QUERY"):])
		case strings.HasPrefix(upper, "PERFORM"):
			statements = append(statements, "SELECT"+st[len("PERFORM"):])
		case into.MatchString(st):
			statements = append(statements, into.ReplaceAllString(st, "$1 $3"))
		case regexp.MustCompile(`^(SELECT|WITH|INSERT|UPDATE|DELETE)\b`).MatchString(upper):
			statements = append(statements, st)
		default:
			return nil, nil, fmt.Errorf("a statement this reader does not know: %q", st)
		}
	}
	return statements, variables, nil
}

// uniqueWithoutAccount are the unique indexes that do not include account_id: a database
// sharded by account cannot enforce them per shard, so their tables stay whole (reference
// tables) or the value must name its account (docs/operations.md#many-nodes).
var uniqueWithoutAccount = []string{
	"accounts.accounts_name_key",                      // accounts: a reference table
	"accounts.accounts_sandbox",                       // one sandbox per live account
	"api_keys.api_keys_key_hash_key",                  // api_keys: a reference table
	"api_keys.api_keys_prefix_key",                    //
	"console_sessions.console_sessions_pkey",          // not ready: the session token does not name its account
	"contact_merges.contact_merges_consent_token_key", // the same token, kept for a merged duplicate
	"contacts.contacts_consent_token_key",             // not ready: the consent token does not name its account
	"goose_db_version.goose_db_version_pkey",
	"periodic_tasks.periodic_tasks_pkey",   // one row per maintenance task, not per account
	"suppression_key.suppression_key_pkey", // one row: the key of every account's suppression digests
}

// TestUniqueIndexesIncludeTheAccount keeps uniqueWithoutAccount exact.
func TestUniqueIndexesIncludeTheAccount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := connect(t)
	rows, _ := conn.Query(ctx, `SELECT c.relname || '.' || i.relname
		FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class c ON c.oid = x.indrelid
		WHERE c.relnamespace = 'public'::regnamespace AND x.indisunique
		  AND NOT EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'account_id'
		                  AND a.attnum = ANY (x.indkey))
		ORDER BY 1`)
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != strings.Join(uniqueWithoutAccount, " ") {
		t.Errorf("unique indexes without account_id:\n got %v\nwant %v", got, uniqueWithoutAccount)
	}
}

type scanNode struct {
	Type     string     `json:"Node Type"`
	Relation string     `json:"Relation Name"`
	Alias    string     `json:"Alias"`
	Function string     `json:"Function Name"`
	Index    string     `json:"Index Cond"`
	Recheck  string     `json:"Recheck Cond"`
	Filter   string     `json:"Filter"`
	Hash     string     `json:"Hash Cond"`
	Merge    string     `json:"Merge Cond"`
	Join     string     `json:"Join Filter"`
	Plans    []scanNode `json:"Plans"`
}

// unconfined is a scan no condition confines to an account ("table alias"), or a call of a
// function of ours that takes no account.
type unconfined struct{ scanned, why string }

func (u unconfined) String() string { return u.why }

// unconfinedScans lists the scans under n of account-keyed tables that no condition on
// account_id restricts (their own, a bitmap index's under them, or a join's above them), and
// the calls of our own functions that take no account.
func unconfinedScans(n scanNode, joinConds string, keyed, ours map[string]bool) []unconfined {
	var found []unconfined
	own := []string{n.Index, n.Recheck, n.Filter}
	for _, c := range n.Plans {
		if c.Type == "Bitmap Index Scan" {
			own = append(own, c.Index)
		}
	}
	joinConds += "\n" + n.Hash + "\n" + n.Merge + "\n" + n.Join
	if n.Relation != "" && keyed[n.Relation] && !strings.HasPrefix(n.Type, "ModifyTable") && n.Type != "Insert" &&
		!slices.ContainsFunc(append(own, strings.Split(joinConds, "\n")...), confines) {
		found = append(found, unconfined{n.Relation + " " + n.Alias,
			fmt.Sprintf("%s on %s %s without account_id = a parameter or another row's account_id", n.Type, n.Relation, n.Alias)})
	}
	if takesAccount, isOurs := ours[n.Function]; n.Type == "Function Scan" && isOurs && !takesAccount {
		found = append(found, unconfined{why: "calls " + n.Function})
	}
	for _, c := range n.Plans {
		found = append(found, unconfinedScans(c, joinConds, keyed, ours)...)
	}
	return found
}

// connect opens a connection to a fresh migrated database for the test.
func connect(t *testing.T) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), testkit.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// confining is a condition that ties a scan to one account: its account_id equal to a
// parameter (or one of an array parameter's), or to a joined row's account_id (which a scan's
// filter may name first, its own column unqualified: "due.account_id = account_id"). Any
// mention of account_id (IS NOT NULL, <>) is not enough.
var confining = regexp.MustCompile(`account_id = (\$\d+|ANY \(\$\d+|\(?\w+\.account_id\b)|\w+\.account_id = \(?(\$\d+|\w+\.account_id\b|account_id\b)`)

// confines reports whether a plan's condition ties its rows to one account: a term that is
// confining, or an AND of which one term confines, or an OR of which every term does
// (account_id = $1 OR status = 'x' lets every account's rows with that status through).
func confines(cond string) bool {
	cond = unwrap(strings.TrimSpace(cond))
	if cond == "" {
		return false
	}
	if terms := splitTop(cond, " OR "); len(terms) > 1 {
		for _, t := range terms {
			if !confines(t) {
				return false
			}
		}
		return true
	}
	if terms := splitTop(cond, " AND "); len(terms) > 1 {
		return slices.ContainsFunc(terms, confines)
	}
	return confining.MatchString(literal.ReplaceAllString(cond, "''"))
}

// literal is a quoted string of a condition, whose text is no condition.
var literal = regexp.MustCompile(`'[^']*'`)

// unwrap takes off the parentheses around all of s.
func unwrap(s string) string {
	for strings.HasPrefix(s, "(") && strings.HasSuffix(s, ")") {
		depth, whole := 0, true
		for i, r := range s {
			switch r {
			case '(':
				depth++
			case ')':
				depth--
			}
			if depth == 0 && i < len(s)-1 {
				whole = false
				break
			}
		}
		if !whole {
			return s
		}
		s = strings.TrimSpace(s[1 : len(s)-1])
	}
	return s
}

// splitTop splits s at op where op is outside every parenthesis (and every quoted string).
func splitTop(s, op string) []string {
	var terms []string
	depth, quoted, from := 0, false, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\'':
			quoted = !quoted
		case quoted:
		case c == '(':
			depth++
		case c == ')':
			depth--
		case depth == 0 && strings.HasPrefix(s[i:], op):
			terms = append(terms, s[from:i])
			from = i + len(op)
			i += len(op) - 1
		}
	}
	return append(terms, s[from:])
}

// paramAccount is a condition that names the account as a parameter: (account_id = $1).
var paramAccount = regexp.MustCompile(`account_id = \$\d+`)

// joinsOnly reports whether the plan scans an account-keyed table at all: a plan that does,
// and whose scans passed only through joins on account_id, must name an account somewhere.
func joinsOnly(n scanNode, keyed map[string]bool) bool {
	if n.Relation != "" && keyed[n.Relation] && !strings.HasPrefix(n.Type, "ModifyTable") {
		return true
	}
	for _, c := range n.Plans {
		if joinsOnly(c, keyed) {
			return true
		}
	}
	return false
}

// generatedQueries reads the SQL constants sqlc generated into gen/db, by query name.
func generatedQueries(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("../../../gen/db/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("gen/db: %v", err)
	}
	out := map[string]string{}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for name, sql := range queriesIn(t, f, string(src)) {
			out[name] = sql
		}
	}
	return out
}

var paramRef = regexp.MustCompile(`\$(\d+)`)

func maxParam(sql string) int {
	n := 0
	for _, m := range paramRef.FindAllStringSubmatch(sql, -1) {
		if v, _ := strconv.Atoi(m[1]); v > n {
			n = v
		}
	}
	return n
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// The conditions that confine a scan, and mentions of account_id that do not.
func TestConfiningConditions(t *testing.T) {
	for cond, want := range map[string]bool{
		"(account_id = $1)":                         true,
		"((account_id = $1) AND (contact_id = $2))": true,
		"(account_id = ANY ($3))":                   true,
		"(d.account_id = e.account_id)":             true,
		"(account_id = s.account_id)":               true,
		"(account_id IS NOT NULL)":                  false,
		"(account_id <> $1)":                        false,
		"(d.account_id <> e.account_id)":            false,
		"(contact_id = $1)":                         false,
		// an OR lets through what any of its branches does: it confines only if each does
		"((account_id = $1) AND (status <> 'Removed'::text))":                           true,
		"((account_id = $1) OR (status = 'Failing'::text))":                             false,
		"((status = 'x'::text) OR ((account_id = $1) AND (event_type = $2)))":           false,
		"(((account_id = $1) AND (a = 1)) OR ((account_id = $2) AND (b = 2)))":          true,
		"((note = 'account_id = $1 OR x'::text) AND (status = 'x'::text))":              false,
		"((account_id = ANY ($1::uuid[])) AND (NOT test))":                              true,
		"((status = 'Failing'::text) AND (coalesce(last_success_at, created_at) < $1))": false,
		"": false,
	} {
		if got := confines(cond); got != want {
			t.Errorf("%s confines: %v, want %v", cond, got, want)
		}
	}
}
