package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/contactd/contactd/internal/apicore"
	"github.com/contactd/contactd/internal/auth"
	"github.com/contactd/contactd/internal/contact"
	"github.com/contactd/contactd/internal/contact/search"
	"github.com/contactd/contactd/internal/delivery"
	"github.com/contactd/contactd/internal/field"
	"github.com/contactd/contactd/internal/platform/ids"
	"github.com/contactd/contactd/internal/segment"
	"github.com/contactd/contactd/internal/subscription"
)

// contactsPage searches and filters the account's contacts with the list API's filters.
func (c *Console) contactsPage(ec echo.Context) error {
	q := ec.QueryParams()
	o := search.ListOptions{Limit: 25, Cursor: q.Get("cursor"), Sort: "createdAt"}
	if v := strings.TrimSpace(q.Get("q")); v != "" {
		o.Q = &v
	}
	if v := strings.TrimSpace(q.Get("tag")); v != "" {
		o.Tags = []string{v}
	}
	if v := q.Get("emailStatus"); v != "" {
		o.EmailStatus = &v
	}
	if v := q.Get("recordStatus"); v != "" {
		o.RecordStatus = &v
	}
	if v, err := strconv.Atoi(q.Get("minLeadScore")); err == nil {
		o.MinLeadScore = &v
	}
	contacts, next, err := c.d.Search.List(ec.Request().Context(), sessionOf(ec).AccountID, o)
	if err != nil {
		return c.failed(ec, err)
	}
	nextURL := ""
	if next != "" {
		v := url.Values{"cursor": {next}}
		for _, k := range []string{"q", "tag", "emailStatus", "recordStatus", "minLeadScore"} {
			if q.Get(k) != "" {
				v.Set(k, q.Get(k))
			}
		}
		nextURL = "/console/contacts?" + v.Encode()
	}
	return c.render(ec, http.StatusOK, "contacts", map[string]any{"Title": "Contacts", "Contacts": contacts,
		"Q": q.Get("q"), "Tag": q.Get("tag"), "EmailStatus": q.Get("emailStatus"), "Next": nextURL,
		"RecordStatus": q.Get("recordStatus"), "MinLeadScore": q.Get("minLeadScore"),
		"Statuses": []string{"Pending", "Valid", "Invalid"}, "RecordStatuses": []string{"Marketing", "NonMarketing"}})
}

// shownField is a custom field on a contact's page: its value as text, and what its form
// offers (the options of an enum, true or false for a boolean).
type shownField struct {
	Key, Label, Type, Value string
	Archived                bool
	Choices                 []string
}

// shownFields are the account's fields with the contact's values: every active field (to
// edit), and an archived one only where the contact still has a value.
func (c *Console) shownFields(ctx context.Context, account uuid.UUID, stored []byte) ([]shownField, error) {
	if c.d.Fields == nil {
		return nil, nil
	}
	defs, err := c.d.Fields.List(ctx, account, true)
	if err != nil {
		return nil, err
	}
	values, err := field.ParseValues(stored)
	if err != nil {
		return nil, err
	}
	var out []shownField
	for _, f := range defs {
		v, has := values[f.Key]
		if f.ArchivedAt != nil && !has {
			continue
		}
		sf := shownField{Key: f.Key, Label: f.Label, Type: string(f.Type), Value: fieldText(v), Archived: f.ArchivedAt != nil}
		switch f.Type {
		case field.Enum:
			for _, o := range f.Options {
				if !o.Archived {
					sf.Choices = append(sf.Choices, o.Value)
				}
			}
		case field.Boolean:
			sf.Choices = []string{"true", "false"}
		}
		out = append(out, sf)
	}
	return out, nil
}

// fieldText is a value as the console shows and edits it: a multiEnum's options joined by ", ".
func fieldText(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	case []any:
		parts := make([]string, len(v))
		for i, o := range v {
			parts[i], _ = o.(string)
		}
		return strings.Join(parts, ", ")
	}
	return fmt.Sprint(v)
}

// setField writes one custom field of a contact from its form, as PATCH does: an empty value
// clears it; a number, a boolean and a multiEnum's comma-separated options are sent as their
// JSON, so the API's rules (and its 400s) are the console's.
func (c *Console) setField(ec echo.Context) error {
	ctx, id, account := ec.Request().Context(), ec.Param("id"), sessionOf(ec).AccountID
	key, text := ec.FormValue("key"), strings.TrimSpace(ec.FormValue("value"))
	f, err := c.d.Fields.Get(ctx, account, key)
	if err != nil {
		return c.failed(ec, err)
	}
	var value any = text
	switch {
	case text == "":
		value = nil
	case f.Type == field.Number:
		if n, err := strconv.ParseFloat(text, 64); err == nil {
			value = n
		}
	case f.Type == field.Boolean:
		if b, err := strconv.ParseBool(text); err == nil {
			value = b
		}
	case f.Type == field.MultiEnum:
		var options []string
		for _, o := range strings.Split(text, ",") {
			options = append(options, strings.TrimSpace(o))
		}
		value = options
	}
	raw, err := json.Marshal(map[string]any{key: value})
	if err != nil {
		return err
	}
	if _, err := c.d.Contacts.Update(ctx, account, id, contact.UpdateInput{CustomFields: raw}); err != nil {
		return c.failed(ec, err)
	}
	return ec.Redirect(http.StatusSeeOther, "/console/contacts/"+url.PathEscape(id))
}

// shownEvent is an event on a contact's page.
type shownEvent struct {
	ID, Type string
	At       time.Time
	Details  string
}

func (c *Console) contactPage(ec echo.Context) error {
	id := ec.Param("id")
	s := sessionOf(ec)
	ct, err := c.d.Contacts.Get(ec.Request().Context(), s.AccountID, &id, nil, nil)
	if err != nil {
		return c.failed(ec, err)
	}
	data := map[string]any{"Title": ct.Email, "C": ct, "ConsentURL": c.d.Contacts.ConsentURL(ct), "CanWrite": s.Has("contacts:write")}
	if data["Fields"], err = c.shownFields(ec.Request().Context(), s.AccountID, ct.CustomFields); err != nil {
		return err
	}
	if s.Has(auth.ScopeEventsRead) {
		evs, err := c.d.Events.OfContact(ec.Request().Context(), s.AccountID, ct.ID, 200)
		if err != nil {
			return err
		}
		events := make([]shownEvent, len(evs))
		for i, e := range evs {
			events[i] = shownEvent{ID: e.ID, Type: e.Type, At: e.At, Details: infoOf(e.Payload)}
		}
		data["Events"], data["EventsAllowed"] = events, true
	}
	return c.render(ec, http.StatusOK, "contact", data)
}

// infoOf is the event's details member, indented for reading.
func infoOf(payload string) string {
	var ev struct {
		Data map[string]json.RawMessage `json:"data"`
	}
	if json.Unmarshal([]byte(payload), &ev) != nil {
		return ""
	}
	for k, v := range ev.Data {
		if k != "contactInfo" {
			var out bytes.Buffer
			if json.Indent(&out, v, "", "  ") == nil {
				return k + ": " + out.String()
			}
		}
	}
	return ""
}

func (c *Console) addTag(ec echo.Context) error {
	return c.changeTag(ec, c.d.Contacts.AddTags)
}

func (c *Console) removeTag(ec echo.Context) error {
	return c.changeTag(ec, c.d.Contacts.RemoveTags)
}

func (c *Console) changeTag(ec echo.Context, change func(ctx context.Context, account uuid.UUID, id string, tags []string) ([]string, error)) error {
	id := ec.Param("id")
	tag := strings.TrimSpace(ec.FormValue("tag"))
	if _, err := change(ec.Request().Context(), sessionOf(ec).AccountID, id, []string{tag}); err != nil {
		return c.failed(ec, err)
	}
	return ec.Redirect(http.StatusSeeOther, "/console/contacts/"+url.PathEscape(id))
}

func (c *Console) addProperty(ec echo.Context) error {
	id := ec.Param("id")
	if _, err := c.d.Contacts.AddProperty(ec.Request().Context(), sessionOf(ec).AccountID, id, strings.TrimSpace(ec.FormValue("address"))); err != nil {
		return c.failed(ec, err)
	}
	return ec.Redirect(http.StatusSeeOther, "/console/contacts/"+url.PathEscape(id))
}

func (c *Console) archiveProperty(ec echo.Context) error {
	ct, err := c.d.Contacts.ArchiveProperty(ec.Request().Context(), sessionOf(ec).AccountID, ec.Param("property"))
	if err != nil {
		return c.failed(ec, err)
	}
	return ec.Redirect(http.StatusSeeOther, "/console/contacts/"+ct.ID.String())
}

type shownSubscription struct {
	subscription.Subscription
	Health delivery.Health
}

func (c *Console) webhooksPage(ec echo.Context) error {
	ctx := ec.Request().Context()
	account := sessionOf(ec).AccountID
	subs, err := c.d.Webhooks.List(ctx, account)
	if err != nil {
		return err
	}
	byID, err := c.health(ec, account)
	if err != nil {
		return err
	}
	shown := make([]shownSubscription, len(subs))
	for i, s := range subs {
		shown[i] = shownSubscription{Subscription: s, Health: byID[s.ID]}
	}
	return c.render(ec, http.StatusOK, "webhooks", map[string]any{"Title": "Webhooks", "Subscriptions": shown})
}

func (c *Console) health(ec echo.Context, account uuid.UUID) (map[uuid.UUID]delivery.Health, error) {
	return c.d.Deliveries.HealthSince(ec.Request().Context(), account, c.d.Now().Add(-24*time.Hour))
}

func (c *Console) webhookPage(ec echo.Context) error {
	return c.showWebhook(ec, "")
}

// showWebhook is a subscription's page: its settings, health and delivery log; secret is a
// secret just rotated, shown this once.
func (c *Console) showWebhook(ec echo.Context, secret string) error {
	ctx := ec.Request().Context()
	s := sessionOf(ec)
	sub, err := c.d.Webhooks.Get(ctx, s.AccountID, ec.Param("id"))
	if err != nil {
		return c.failed(ec, err)
	}
	attempts, _, err := c.d.Deliveries.Attempts(ctx, s.AccountID, sub.ID.String(), 100, "", s.Has(auth.ScopeEventsRead))
	if err != nil {
		return c.failed(ec, err)
	}
	byID, err := c.health(ec, s.AccountID)
	if err != nil {
		return err
	}
	return c.render(ec, http.StatusOK, "webhook", map[string]any{"Title": sub.URL, "S": sub, "Health": byID[sub.ID],
		"Attempts": attempts, "Secret": secret, "CanWrite": s.Has("webhooks:write")})
}

// eventTypesPage is the event catalog, as GET /public/v1/event-types serves it.
// segmentsPage shows the account's segments, each filter as its groups of conditions.
func (c *Console) segmentsPage(ec echo.Context) error {
	sgs, err := c.d.Segments.List(ec.Request().Context(), sessionOf(ec).AccountID)
	if err != nil {
		return c.failed(ec, err)
	}
	type shown struct {
		ID, Name, Kind, Status string
		Groups                 [][]string // each condition as attribute, operator and operands
	}
	out := make([]shown, len(sgs))
	for i, sg := range sgs {
		out[i] = shown{ID: sg.ID.String(), Name: sg.Name, Kind: sg.Kind, Status: sg.Status}
		for _, g := range sg.Filter.Groups {
			var conds []string
			for _, cd := range g.Conditions {
				words := []string{cd.Attribute, cd.Operator}
				if cd.Value != nil {
					words = append(words, string(cd.Value))
				}
				if len(cd.Values) > 0 {
					values := make([]string, len(cd.Values))
					for j, v := range cd.Values {
						values[j] = string(v)
					}
					words = append(words, strings.Join(values, ", "))
				}
				conds = append(conds, strings.Join(words, " "))
			}
			out[i].Groups = append(out[i].Groups, conds)
		}
	}
	return c.render(ec, http.StatusOK, "segments", map[string]any{"Title": "Segments", "Segments": out})
}

// segmentPage shows a segment's members, a page of them by contact id, and how many it has.
func (c *Console) segmentPage(ec echo.Context) error {
	ctx, account := ec.Request().Context(), sessionOf(ec).AccountID
	id, ok := ids.Parse(ec.Param("id"))
	if !ok {
		return c.failed(ec, segment.ErrNotFound)
	}
	sg, err := c.d.Segments.Get(ctx, account, id)
	if err != nil {
		return c.failed(ec, err)
	}
	after := uuid.Nil
	if raw := ec.QueryParam("after"); raw != "" {
		if after, ok = ids.Parse(raw); !ok {
			return c.fail(ec, http.StatusBadRequest, "That is not a page of this list.")
		}
	}
	page, err := c.d.Segments.Members(ctx, account, id, after, segment.DefaultMembersPage)
	if err != nil {
		return c.failed(ec, err)
	}
	return c.render(ec, http.StatusOK, "segment", map[string]any{"Title": sg.Name, "S": sg, "Members": page})
}

func (c *Console) eventTypesPage(ec echo.Context) error {
	catalog, err := apicore.Catalog()
	if err != nil {
		return c.failed(ec, err)
	}
	return c.render(ec, http.StatusOK, "eventtypes", map[string]any{"Title": "Event types", "Types": catalog.Types})
}

func (c *Console) redeliver(ec echo.Context) error {
	sub := ec.Param("id")
	if _, err := c.d.Deliveries.Redeliver(ec.Request().Context(), sessionOf(ec).AccountID, sub, ec.Param("delivery")); err != nil {
		return c.failed(ec, err)
	}
	return ec.Redirect(http.StatusSeeOther, "/console/webhooks/"+url.PathEscape(sub))
}

func (c *Console) rotate(ec echo.Context) error {
	r, err := c.d.Webhooks.RotateSecret(ec.Request().Context(), sessionOf(ec).AccountID, ec.Param("id"))
	if err != nil {
		return c.failed(ec, err)
	}
	return c.showWebhook(ec, r.Secret) // shown once, never stored in a URL
}

// sendTest queues a test event to the subscription; its attempt shows in the delivery log.
func (c *Console) sendTest(ec echo.Context) error {
	sub := ec.Param("id")
	if _, err := c.d.Webhooks.SendTest(ec.Request().Context(), sessionOf(ec).AccountID, sub); err != nil {
		return c.failed(ec, err)
	}
	return ec.Redirect(http.StatusSeeOther, "/console/webhooks/"+url.PathEscape(sub))
}

// pause pauses the subscription (paused=true) or resumes it.
func (c *Console) pause(ec echo.Context) error {
	sub := ec.Param("id")
	if _, err := c.d.Webhooks.SetPaused(ec.Request().Context(), sessionOf(ec).AccountID, sub, ec.FormValue("paused") == "true"); err != nil {
		return c.failed(ec, err)
	}
	return ec.Redirect(http.StatusSeeOther, "/console/webhooks/"+url.PathEscape(sub))
}

func (c *Console) remove(ec echo.Context) error {
	if err := c.d.Webhooks.Remove(ec.Request().Context(), sessionOf(ec).AccountID, ec.Param("id")); err != nil {
		return c.failed(ec, err)
	}
	return ec.Redirect(http.StatusSeeOther, "/console/webhooks")
}
