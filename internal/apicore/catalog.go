package apicore

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/event"
)

// EventType is one entry of the event catalog (GET /public/v1/event-types): a type, the JSON
// Schema of one of its events and an example, all taken from openapi.yaml.
type EventType struct {
	Type        event.EventType
	Description string
	InfoMember  string
	// Schema is the JSON Schema (2020-12) of one event of the type, self-contained: the spec's
	// WebhookEvent with data narrowed to contactInfo and the type's own member.
	Schema map[string]any
	// Example is the type's example event, components/examples/<Type>Event's first event.
	Example json.RawMessage
	// compiled is Schema as kin-openapi validates with.
	compiled *openapi3.Schema
}

// EventCatalog is every event type of the spec's EventType enum, in its order.
type EventCatalog struct {
	Types  []EventType
	byType map[event.EventType]*EventType
}

// Catalog is the event catalog of the embedded spec, built once.
var Catalog = sync.OnceValues(func() (*EventCatalog, error) {
	spec, err := api.GetSwagger()
	if err != nil {
		return nil, err
	}
	return newEventCatalog(spec)
})

func newEventCatalog(spec *openapi3.T) (*EventCatalog, error) {
	raw, err := json.Marshal(spec.Components.Schemas)
	if err != nil {
		return nil, err
	}
	var schemas map[string]any
	if err := json.Unmarshal(raw, &schemas); err != nil {
		return nil, err
	}
	c := &EventCatalog{byType: map[event.EventType]*EventType{}}
	for _, v := range spec.Components.Schemas["EventType"].Value.Enum {
		typ := event.EventType(v.(string))
		member := event.InfoMember(typ)
		if member == "" {
			return nil, fmt.Errorf("event catalog: openapi.yaml's EventType %s has no info member in package event", typ)
		}
		example := spec.Components.Examples[string(typ)+"Event"]
		if example == nil || example.Value == nil {
			return nil, fmt.Errorf("event catalog: openapi.yaml has no example %sEvent", typ)
		}
		first, err := firstEvent(example.Value.Value)
		if err != nil {
			return nil, fmt.Errorf("event catalog: example %sEvent: %w", typ, err)
		}
		event, err := inline(schemas, schemas["WebhookEvent"], 0)
		if err != nil {
			return nil, err
		}
		data := event.(map[string]any)["properties"].(map[string]any)["data"].(map[string]any)
		props := data["properties"].(map[string]any)
		data["properties"] = map[string]any{"contactInfo": props["contactInfo"], member: props[member]}
		data["required"] = []any{"contactInfo", member}
		schema := event.(map[string]any)
		js, err := json.Marshal(schema)
		if err != nil {
			return nil, err
		}
		compiled := &openapi3.Schema{}
		if err := json.Unmarshal(js, compiled); err != nil {
			return nil, err
		}
		entry := EventType{Type: typ, Description: strings.TrimSpace(example.Value.Summary), InfoMember: member,
			Schema: jsonSchema(schema), Example: first, compiled: compiled}
		c.Types = append(c.Types, entry)
	}
	for i := range c.Types {
		c.byType[c.Types[i].Type] = &c.Types[i]
	}
	for _, t := range c.Types {
		if err := c.Validate(t.Example); err != nil {
			return nil, fmt.Errorf("event catalog: example %sEvent: %w", t.Type, err)
		}
	}
	return c, nil
}

// Example is typ's example event (nil for a type the catalog does not have).
func (c *EventCatalog) Example(typ event.EventType) json.RawMessage {
	if t := c.byType[typ]; t != nil {
		return t.Example
	}
	return nil
}

// Validate checks one event (as delivered in events[], or as the feed shows it) against its
// type's schema.
func (c *EventCatalog) Validate(ev json.RawMessage) error {
	var v map[string]any
	if err := json.Unmarshal(ev, &v); err != nil {
		return err
	}
	typ, _ := v["eventType"].(string)
	t := c.byType[event.EventType(typ)]
	if t == nil {
		return fmt.Errorf("event type %q is not in the catalog", typ)
	}
	return t.compiled.VisitJSON(v, FormatOptions()...)
}

func firstEvent(v any) (json.RawMessage, error) {
	payload, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("is not a payload")
	}
	events, ok := payload["events"].([]any)
	if !ok || len(events) == 0 {
		return nil, fmt.Errorf("has no events")
	}
	return json.Marshal(events[0])
}

// inline replaces each {"$ref": "#/components/schemas/X"} in v with X, itself inlined.
func inline(schemas map[string]any, v any, depth int) (any, error) {
	if depth > 32 {
		return nil, fmt.Errorf("event catalog: schema references nest too deep")
	}
	switch x := v.(type) {
	case map[string]any:
		if ref, ok := x["$ref"].(string); ok {
			name, found := strings.CutPrefix(ref, "#/components/schemas/")
			if !found || schemas[name] == nil {
				return nil, fmt.Errorf("event catalog: unknown reference %s", ref)
			}
			return inline(schemas, schemas[name], depth+1)
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			in, err := inline(schemas, e, depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = in
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			in, err := inline(schemas, e, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = in
		}
		return out, nil
	default:
		return v, nil
	}
}

// jsonSchema is an inlined OpenAPI 3.0 schema in JSON Schema 2020-12's words: example becomes
// examples, nullable a "null" type.
func jsonSchema(s map[string]any) map[string]any {
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			out := make(map[string]any, len(x))
			for k, e := range x {
				switch k {
				case "example":
					out["examples"] = []any{e}
				case "nullable":
				default:
					out[k] = walk(e)
				}
			}
			if x["nullable"] == true {
				if t, ok := x["type"].(string); ok {
					out["type"] = []any{t, "null"}
				}
			}
			return out
		case []any:
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = walk(e)
			}
			return out
		default:
			return v
		}
	}
	out := walk(s).(map[string]any)
	out["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	return out
}
