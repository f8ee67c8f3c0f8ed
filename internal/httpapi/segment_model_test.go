package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/apicore"
	"github.com/contactd/contactd/internal/importer"
	"github.com/contactd/contactd/internal/segment"
	"github.com/contactd/contactd/internal/testkit"
)

// segmentModel is what the model test knows: the account's contacts, its segments, and for
// each ready segment the members its events say it has.
type segmentModel struct {
	t       *testing.T
	a       *testkit.API
	rng     *rand.Rand
	account uuid.UUID
	key     string
	// contacts by id; emails in use; each contact's value of the unique field ext
	contacts map[string]string
	ext      map[string]string
	segments []string
	snapshot string
	// folded is, for each segment whose events are followed, its members as its events say:
	// the members when it was last ready (the start, or the end of its backfill), then each
	// event applied.
	folded map[string]map[string]bool
	seen   int
	// backfilling is the segment being backfilled beside writes: its events are not followed
	// until the backfill ends (it may turn ready between two writes).
	backfilling string
	dir         string // for the import's files
}

var (
	modelNames  = []any{"Ann", "Bob", "Cy"}
	modelTags   = []any{"a", "b", "c"}
	modelStates = []any{"IL", "WI"}
)

// randomCondition is one condition on an attribute that the model's writes change, its
// operands near the values the contacts hold (a bound a contact sits on included).
func (m *segmentModel) randomCondition() map[string]any {
	pick := func(vs []any) any { return vs[m.rng.IntN(len(vs))] }
	either := func(ops ...string) string { return ops[m.rng.IntN(len(ops))] }
	switch m.rng.IntN(12) {
	case 0:
		return cond("name", either("eq", "neq"), pick(modelNames))
	case 1:
		return map[string]any{"attribute": "name", "operator": either("in", "notIn"), "values": []any{pick(modelNames), pick(modelNames)}}
	case 2:
		return cond("tags", either("contains", "notContains"), pick(modelTags))
	case 3:
		return cond("tags", either("exists", "notExists"), nil)
	case 4:
		return cond("address.state", either("eq", "neq"), pick(modelStates))
	case 5:
		return cond("engagement.numOfEmailClicks", either("gt", "gte", "lt", "lte", "eq"), m.rng.IntN(3))
	case 6:
		return cond("recordStatus", "eq", either("Marketing", "NonMarketing"))
	case 7:
		return cond("customFields.tier", either("eq", "neq"), either("gold", "silver"))
	case 8:
		return cond("emailStatus", either("eq", "neq"), either("Valid", "Invalid", "Pending"))
	case 9:
		return cond("leadScore", either("gte", "lt"), pick([]any{15, 16, 23, 28}))
	case 10:
		return cond("engagement.lastEmailClickDate", "exists", nil)
	default:
		return cond("customFields.seats", either("gte", "lt", "exists", "eq"), 5)
	}
}

func (m *segmentModel) randomFilter() map[string]any {
	var groups []any
	for range 1 + m.rng.IntN(3) {
		var conds []any
		for range 1 + m.rng.IntN(3) {
			c := m.randomCondition()
			if c["operator"] == "exists" || c["operator"] == "notExists" {
				delete(c, "value")
			}
			conds = append(conds, c)
		}
		groups = append(groups, map[string]any{"conditions": conds})
	}
	return map[string]any{"groups": groups}
}

// some is one of the model's contacts, "" when it has none.
func (m *segmentModel) some() string {
	ids := make([]string, 0, len(m.contacts))
	for id := range m.contacts {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if len(ids) == 0 {
		return ""
	}
	return ids[m.rng.IntN(len(ids))]
}

func (m *segmentModel) must(r *testkit.Response, what string, ok ...int) {
	m.t.Helper()
	if r.Status != 200 && r.Status != 204 && !slices.Contains(ok, r.Status) {
		m.t.Fatalf("%s: %d %s", what, r.Status, r.Body)
	}
}

// newContact is a random new contact's body; its email's domain is one enrichment finds
// valid, or one it finds nothing at.
func (m *segmentModel) newContact() map[string]any {
	pick := func(vs []any) any { return vs[m.rng.IntN(len(vs))] }
	n := m.rng.IntN(1_000_000_000)
	body := map[string]any{"email": fmt.Sprintf("m%d@%s", n, pick([]any{"example.com", "good.example"})), "name": pick(modelNames),
		"tags": []any{pick(modelTags)}, "customFields": map[string]any{"tier": pick([]any{"gold", "silver"}), "ext": fmt.Sprintf("x%d", n)}}
	if m.rng.IntN(2) == 0 {
		body["address"] = fmt.Sprintf("%d Main St, Springfield, %s 62704", 1+m.rng.IntN(99), pick(modelStates))
	}
	return body
}

func (m *segmentModel) created(id string, body map[string]any) {
	m.contacts[id] = body["email"].(string)
	m.ext[id] = body["customFields"].(map[string]any)["ext"].(string)
}

func (m *segmentModel) gone(id string) {
	delete(m.contacts, id)
	delete(m.ext, id)
}

// modelWrites are the write paths the model takes, each as likely.
var modelWrites = []string{"create", "create", "patch", "add tags", "remove tags", "replace tags", "activity", "property",
	"archive", "batch upsert", "batch create", "upsert by matchField", "import", "merge", "delete", "erase", "enrich", "snapshot by hand"}

// write makes one random write of some kind, and says which.
func (m *segmentModel) write() string {
	a, key, pick := m.a, m.key, func(vs []any) any { return vs[m.rng.IntN(len(vs))] }
	id := m.some()
	op := modelWrites[m.rng.IntN(len(modelWrites))]
	if id == "" || len(m.contacts) < 6 {
		op = "create"
	}
	switch op {
	case "create":
		body := m.newContact()
		m.created(createContact(m.t, a, key, body).Contact.ContactId, body)
	case "patch":
		body := map[string]any{"name": pick(modelNames), "recordStatus": pick([]any{"Marketing", "NonMarketing"}),
			"customFields": map[string]any{"seats": m.rng.IntN(10), "tier": pick([]any{"gold", "silver", nil})}}
		m.must(a.Do("PATCH", "/public/v1/contact/"+id, key, body), "patch")
	case "add tags":
		m.must(a.Do("POST", "/public/v1/contact/"+id+"/tags", key, map[string]any{"tags": []any{pick(modelTags)}}), "add tags")
	case "remove tags":
		m.must(a.Do("DELETE", "/public/v1/contact/"+id+"/tags", key, map[string]any{"tags": []any{pick(modelTags)}}), "remove tags")
	case "replace tags":
		tags := []any{}
		for _, t := range modelTags {
			if m.rng.IntN(2) == 0 {
				tags = append(tags, t)
			}
		}
		m.must(a.Do("PUT", "/public/v1/contact/"+id+"/tags", key, map[string]any{"tags": tags}), "replace tags")
	case "activity":
		m.must(a.Do("POST", "/public/v1/contact/"+id+"/activity", key, map[string]any{"type": "EmailClick"}), "activity")
	case "property":
		m.must(a.Do("POST", "/public/v1/contact/"+id+"/property", key,
			map[string]any{"address": fmt.Sprintf("%d Oak St, Peoria, %s 61602", 1+m.rng.IntN(99), pick(modelStates))}), "property", 400)
	case "archive":
		c := getContact(m.t, a, key, id)
		if len(c.Properties) == 0 {
			return "no property to archive"
		}
		p := c.Properties[m.rng.IntN(len(c.Properties))].PropertyId
		m.must(a.Do("POST", "/public/v1/contact/property/"+p+"/archive", key, nil), "archive")
	case "batch upsert":
		other := m.some()
		items := []any{map[string]any{"email": m.contacts[id], "name": pick(modelNames), "tags": []any{pick(modelTags)}},
			map[string]any{"email": m.contacts[other], "customFields": map[string]any{"seats": m.rng.IntN(10)}}}
		batch(m.t, a, key, "upsert", items...)
	case "batch create":
		bodies := []map[string]any{m.newContact(), m.newContact()}
		for i, r := range batch(m.t, a, key, "create", bodies[0], bodies[1]) {
			m.created(r.ContactId.String(), bodies[i])
		}
	case "upsert by matchField":
		r := a.Do("POST", "/public/v1/contacts/batch", key, map[string]any{"mode": "upsert", "matchField": "ext", "contacts": []any{
			map[string]any{"email": m.contacts[id], "name": pick(modelNames), "customFields": map[string]any{"ext": m.ext[id], "seats": m.rng.IntN(10)}}}})
		m.must(r, "upsert by matchField")
	case "import":
		other, fresh := m.some(), m.newContact()
		lines := []map[string]any{{"email": m.contacts[id], "tags": []any{pick(modelTags)}},
			{"email": m.contacts[other], "name": pick(modelNames)}, fresh}
		var file strings.Builder
		for _, l := range lines {
			b, _ := json.Marshal(l)
			file.Write(append(b, '\n'))
		}
		path := filepath.Join(m.dir, "import.ndjson")
		if err := os.WriteFile(path, []byte(file.String()), 0o600); err != nil {
			m.t.Fatal(err)
		}
		batchOf, err := apicore.NewBatch(a.Svc.Contacts)
		if err != nil {
			m.t.Fatal(err)
		}
		sum, err := importer.Run(context.Background(), a.Store, batchOf, importer.Options{Account: m.account, File: path, Writers: 1, Progress: io.Discard})
		if err != nil || sum.Rejected > 0 || sum.Created != 1 {
			m.t.Fatalf("import: %v %+v", err, sum)
		}
		var c api.Contact
		r := a.Do("GET", "/public/v1/contact?emailId="+fresh["email"].(string), key, nil)
		if r.JSON(m.t, &c); r.Status != 200 {
			m.t.Fatalf("the imported contact: %d %s", r.Status, r.Body)
		}
		m.created(c.ContactId, fresh)
	case "merge":
		dup := m.some()
		if dup == id {
			return "no merge"
		}
		if _, r := merge(m.t, a, key, map[string]any{"primaryContactId": id, "duplicateContactIds": []string{dup}}); r.Status != 200 {
			m.t.Fatalf("merge: %d %s", r.Status, r.Body)
		}
		m.gone(dup)
	case "delete":
		m.must(a.Do("DELETE", "/public/v1/contact/"+id, key, nil), "delete")
		m.gone(id)
	case "erase":
		m.must(a.Do("POST", "/public/v1/contact/"+id+"/erase", key, nil), "erase")
		m.gone(id)
	case "enrich":
		for {
			n, err := a.Svc.Enrich.RunBatch(context.Background())
			if err != nil {
				m.t.Fatal(err)
			}
			if n == 0 {
				break
			}
		}
	case "snapshot by hand":
		method := pick([]any{"PUT", "DELETE"}).(string)
		m.must(a.Do(method, "/public/v1/segments/"+m.snapshot+"/contacts/"+id, key, nil), "snapshot by hand")
	}
	return op
}

// members is each segment's stored members, read on q.
func (m *segmentModel) members(q testkit.OracleQuerier) map[string]map[string]bool {
	rows, err := q.Query(context.Background(), `SELECT segment_id::text, contact_id::text FROM segment_members WHERE account_id = $1`, m.account)
	if err != nil {
		m.t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]map[string]bool{}
	for rows.Next() {
		var sg, c string
		if err := rows.Scan(&sg, &c); err != nil {
			m.t.Fatal(err)
		}
		if out[sg] == nil {
			out[sg] = map[string]bool{}
		}
		out[sg][c] = true
	}
	return out
}

// oracle is each ready dynamic segment's members as the segment oracle finds them, read on q
// (testkit.SegmentOracle: SQL over the stored rows, no code of the product's matcher).
func (m *segmentModel) oracle(q testkit.OracleQuerier) map[string]map[string]bool {
	ctx := context.Background()
	rows, err := q.Query(ctx, `SELECT segment_id::text, filter FROM segments WHERE account_id = $1 AND kind = 'dynamic' AND status = 'ready'`, m.account)
	if err != nil {
		m.t.Fatal(err)
	}
	type ready struct {
		id     string
		filter []byte
	}
	segments, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (s ready, err error) {
		err = r.Scan(&s.id, &s.filter)
		return s, err
	})
	if err != nil {
		m.t.Fatal(err)
	}
	out := map[string]map[string]bool{}
	for _, sg := range segments {
		ids, err := testkit.SegmentOracle(ctx, q, m.account, sg.filter)
		if err != nil {
			m.t.Fatal(err)
		}
		out[sg.id] = map[string]bool{}
		for id := range ids {
			out[sg.id][id.String()] = true
		}
	}
	return out
}

// fold applies the events since the last fold, read on q, failing on an event that changes
// nothing (a second enter, a leave of a non-member) and, when one write made them (single),
// on a second event of one contact in one segment: one write changes a membership once, so
// a leave and an enter that leave it as it was are wrong too.
func (m *segmentModel) fold(q testkit.OracleQuerier, step string, single bool) {
	rows, err := q.Query(context.Background(), `
		SELECT event_type, payload::jsonb #>> '{data,contactInfo,contactId}',
		       coalesce(payload::jsonb #>> '{data,contactEnteredSegmentInfo,segmentId}', payload::jsonb #>> '{data,contactLeftSegmentInfo,segmentId}')
		FROM webhook_events WHERE account_id = $1 AND event_type IN ('ContactEnteredSegment', 'ContactLeftSegment')
		ORDER BY event_id OFFSET $2`, m.account, m.seen)
	if err != nil {
		m.t.Fatal(err)
	}
	defer rows.Close()
	changed := map[[2]string]bool{}
	for rows.Next() {
		m.seen++
		var typ, c, sg string
		if err := rows.Scan(&typ, &c, &sg); err != nil {
			m.t.Fatal(err)
		}
		in, followed := m.folded[sg]
		if !followed && sg == m.backfilling {
			continue
		}
		if !followed {
			m.t.Fatalf("%s: %s about %s of segment %s, which is not ready", step, typ, c, sg)
		}
		if enters := typ == "ContactEnteredSegment"; enters == in[c] {
			m.t.Fatalf("%s: %s of %s in %s, which was a member: %v", step, typ, c, sg, in[c])
		}
		if pair := [2]string{sg, c}; single && changed[pair] {
			m.t.Fatalf("%s: a second membership event of %s in %s from one write (%s)", step, c, sg, typ)
		} else {
			changed[pair] = true
		}
		in[c] = typ == "ContactEnteredSegment"
	}
	if err := rows.Err(); err != nil {
		m.t.Fatal(err)
	}
}

// check holds, in one snapshot, the stored membership of every ready dynamic segment to the
// oracle's and to its events, and the snapshot's to its events.
func (m *segmentModel) check(step string, single bool) {
	m.t.Helper()
	ctx := context.Background()
	tx, err := m.a.Store.Pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		m.t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // read only
	m.fold(tx, step, single)
	stored, want := m.members(tx), m.oracle(tx)
	for sg, members := range want {
		if d := difference(members, stored[sg]); d != "" {
			m.t.Fatalf("%s: segment %s's members against the oracle's: %s", step, sg, d)
		}
		if d := difference(members, trueOnly(m.folded[sg])); d != "" {
			m.t.Fatalf("%s: segment %s's events against the oracle's members: %s", step, sg, d)
		}
	}
	if len(want) == 0 {
		m.t.Fatalf("%s: no ready dynamic segment", step)
	}
	if d := difference(stored[m.snapshot], trueOnly(m.folded[m.snapshot])); d != "" {
		m.t.Fatalf("%s: the snapshot's events against its members: %s", step, d)
	}
}

func trueOnly(s map[string]bool) map[string]bool {
	out := map[string]bool{}
	for k, v := range s {
		if v {
			out[k] = true
		}
	}
	return out
}

// difference says what want has that got lacks and the reverse ("" when they are equal), a
// few of each.
func difference(want, got map[string]bool) string {
	var missing, extra []string
	for k := range want {
		if !got[k] {
			missing = append(missing, k)
		}
	}
	for k := range got {
		if !want[k] {
			extra = append(extra, k)
		}
	}
	if len(missing)+len(extra) == 0 {
		return ""
	}
	slices.Sort(missing)
	slices.Sort(extra)
	return fmt.Sprintf("%d missing %v, %d extra %v", len(missing), missing[:min(5, len(missing))], len(extra), extra[:min(5, len(extra))])
}

// backfillDuring changes the segments, editing segment sg's filter or deleting it for a new
// one, and runs the backfill concurrently with writes, then follows the segment's events from
// the membership the backfill left.
func (m *segmentModel) backfillDuring(sg string, writes int) {
	m.t.Helper()
	delete(m.folded, sg)
	if m.rng.IntN(2) == 0 {
		m.must(m.a.Do("PATCH", "/public/v1/segments/"+sg, m.key, map[string]any{"filter": m.randomFilter()}), "edit")
	} else {
		m.must(m.a.Do("DELETE", "/public/v1/segments/"+sg, m.key, nil), "delete the segment")
		var created api.Segment
		r := m.a.Do("POST", "/public/v1/segments", m.key, map[string]any{"name": "s" + sg, "filter": m.randomFilter()})
		if r.JSON(m.t, &created); r.Status != 200 {
			m.t.Fatalf("segment: %d %s", r.Status, r.Body)
		}
		m.segments[slices.Index(m.segments, sg)] = created.SegmentId
		sg = created.SegmentId
	}
	m.backfilling = sg
	var wg sync.WaitGroup
	var err error
	wg.Go(func() {
		for did := true; did && err == nil; {
			did, err = m.a.Svc.Segments.BackfillOne(context.Background(), m.a.Svc.Contacts)
		}
	})
	for range writes {
		m.write()
	}
	wg.Wait()
	if err != nil {
		m.t.Fatal(err)
	}
	m.a.Backfill(m.t)
	m.fold(m.a.Store.Pool, "after the backfill", false)
	m.backfilling = ""
	m.folded[sg] = m.members(m.a.Store.Pool)[sg]
	if m.folded[sg] == nil {
		m.folded[sg] = map[string]bool{}
	}
	m.check("backfilled during writes", false)
}

// modelSeeds run in make test; make soak runs random ones (CONTACTD_MODEL_SEED=random), and
// CONTACTD_MODEL_SEED=N runs a failure's seed again (writes beside a backfill interleave as
// they will).
var modelSeeds = []uint64{1, 2}

// Random writes of every path over 500 contacts and more (a backfill spans pages), against
// random segments: after each write, every ready dynamic segment's stored members are what
// the segment oracle finds its filter selects, and what its events say, each event a change
// made once (a member never enters twice, a non-member never leaves, one write moves one
// membership once). A segment edited, or deleted for a new one, while writes go on is
// backfilled beside them and then holds to the same.
func TestSegmentMembershipModel(t *testing.T) {
	t.Parallel()
	seeds := modelSeeds
	switch env := os.Getenv("CONTACTD_MODEL_SEED"); env {
	case "":
	case "random":
		seeds = []uint64{uint64(time.Now().UnixNano())}
	default:
		seed, err := strconv.ParseUint(env, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		seeds = []uint64{seed}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			t.Parallel()
			runSegmentModel(t, seed)
		})
	}
}

func runSegmentModel(t *testing.T, seed uint64) {
	a := testkit.NewAPI(t)
	a.DNS.SetMX("good.example", "mx.good.example")
	account, key := a.Account("model")
	defineField(t, a, key, map[string]any{"key": "tier", "label": "Tier", "type": "enum", "options": []map[string]any{
		{"value": "gold", "label": "Gold"}, {"value": "silver", "label": "Silver"}}})
	defineField(t, a, key, map[string]any{"key": "seats", "label": "Seats", "type": "number"})
	defineField(t, a, key, map[string]any{"key": "ext", "label": "External id", "type": "text", "unique": true})
	m := &segmentModel{t: t, a: a, rng: rand.New(rand.NewPCG(seed, 56)), account: account, key: key,
		contacts: map[string]string{}, ext: map[string]string{}, folded: map[string]map[string]bool{}, dir: t.TempDir()}
	for i := range 8 {
		var sg api.Segment
		r := a.Do("POST", "/public/v1/segments", key, map[string]any{"name": fmt.Sprintf("s%d", i), "filter": m.randomFilter()})
		if r.JSON(t, &sg); r.Status != 200 {
			t.Fatalf("segment: %d %s", r.Status, r.Body)
		}
		m.segments = append(m.segments, sg.SegmentId)
		m.folded[sg.SegmentId] = map[string]bool{}
	}
	m.snapshot = saveSegment(t, a, key, "snap", "snapshot", cond("tags", "contains", "a"))
	const seeded = segment.BackfillPage + 20
	bodies := make([]any, seeded)
	for i := range bodies {
		bodies[i] = m.newContact()
	}
	for i, r := range batch(t, a, key, "create", bodies...) {
		m.created(r.ContactId.String(), bodies[i].(map[string]any))
	}
	a.Backfill(t) // the segments' events begin from the members their backfill left
	stored := m.members(a.Store.Pool)
	for _, sg := range append([]string{m.snapshot}, m.segments...) {
		m.folded[sg] = stored[sg]
		if m.folded[sg] == nil {
			m.folded[sg] = map[string]bool{}
		}
	}
	m.check("seeded", false)
	for step := range 160 {
		what := m.write()
		m.check(fmt.Sprintf("step %d (%s)", step, what), true)
		if step%40 == 39 {
			m.backfillDuring(m.segments[m.rng.IntN(len(m.segments))], 10)
		}
	}
	if m.seen == 0 {
		t.Fatal("no membership changed: the model tested nothing")
	}
	t.Logf("seed %d: %d membership events, %d contacts left", seed, m.seen, len(m.contacts))
}
