package httpapi

import (
	"context"
	"net/http"
	"strconv"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/event"
)

// ListEvents implements GET /public/v1/events.
func (s *Server) ListEvents(ctx context.Context, req api.ListEventsRequestObject) (api.ListEventsResponseObject, error) {
	p := req.Params
	limit := 100
	if p.Limit != nil {
		limit = *p.Limit
	}
	var after string
	if p.After != nil {
		after = *p.After
	}
	page, err := s.events.Page(ctx, principal(ctx).AccountID, after, (*string)(p.EventType), limit)
	if err != nil {
		return nil, err
	}
	return eventListResponse(page), nil
}

// eventListResponse writes the events as stored: the bytes receivers were sent, not decoded
// and encoded again.
type eventListResponse event.FeedPage

func (r eventListResponse) VisitListEventsResponse(w http.ResponseWriter) error {
	size := 64
	for _, e := range r.Events {
		size += len(e) + 1
	}
	b := make([]byte, 0, size)
	b = append(b, `{"events":[`...)
	for i, e := range r.Events {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, e...)
	}
	b = append(b, `],"hasMore":`...)
	b = strconv.AppendBool(b, r.More)
	b = append(b, ',')
	b = appendField(b, "nextCursor", r.Next)
	b = append(b, "}\n"...)
	return writeJSON(w, b)
}

// GetEvent implements GET /public/v1/events/{eventId}.
func (s *Server) GetEvent(ctx context.Context, req api.GetEventRequestObject) (api.GetEventResponseObject, error) {
	payload, err := s.events.Get(ctx, principal(ctx).AccountID, req.EventId)
	if err != nil {
		return nil, err
	}
	return rawEvent(payload), nil
}

type rawEvent []byte

func (r rawEvent) VisitGetEventResponse(w http.ResponseWriter) error {
	return writeJSON(w, append(append(make([]byte, 0, len(r)+1), r...), '\n'))
}

func writeJSON(w http.ResponseWriter, b []byte) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(b)
	return err
}
