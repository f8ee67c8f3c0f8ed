package httpapi

import (
	"context"
	"encoding/json"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/apicore"
	"github.com/contactd/contactd/internal/apitime"
	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/auth"
	"github.com/contactd/contactd/internal/delivery"
	"github.com/contactd/contactd/internal/event"
	"github.com/contactd/contactd/internal/subscription"
)

// CreateWebhook implements POST /public/v1/webhooks.
func (s *Server) CreateWebhook(ctx context.Context, req api.CreateWebhookRequestObject) (api.CreateWebhookResponseObject, error) {
	in := subscription.NewSubscription{URL: req.Body.Url, EventType: event.EventType(req.Body.EventType),
		MaxPerSecond: req.Body.MaxDeliveriesPerSecond}
	if req.Body.Filter != nil {
		in.Filter = *req.Body.Filter
	}
	sub, err := s.webhooks.Create(ctx, principal(ctx).AccountID, in)
	if err != nil {
		return nil, err
	}
	return api.CreateWebhook200JSONResponse(subscriptionToAPI(sub)), nil
}

// ListWebhooks implements GET /public/v1/webhooks.
func (s *Server) ListWebhooks(ctx context.Context, _ api.ListWebhooksRequestObject) (api.ListWebhooksResponseObject, error) {
	subs, err := s.webhooks.List(ctx, principal(ctx).AccountID)
	if err != nil {
		return nil, err
	}
	out := api.WebhookList{Webhooks: make([]api.WebhookSubscription, len(subs))}
	for i, sub := range subs {
		out.Webhooks[i] = subscriptionToAPI(sub)
	}
	return api.ListWebhooks200JSONResponse(out), nil
}

func subscriptionToAPI(s subscription.Subscription) api.WebhookSubscription {
	out := api.WebhookSubscription{
		SubscriptionId: s.ID.String(), Url: s.URL, EventType: api.EventType(s.EventType),
		Status: api.SubscriptionStatus(s.Status), CreatedAt: apitime.From(s.CreatedAt),
		UpdatedAt: apitime.From(s.UpdatedAt), MaxDeliveriesPerSecond: s.MaxPerSecond,
	}
	if s.Secret != "" {
		out.Secret = &s.Secret
	}
	if s.PausedAt != nil {
		paused := true
		out.Paused = &paused
	}
	if s.Filter != nil {
		var f api.WebhookFilter
		if json.Unmarshal(s.Filter, &f) == nil {
			out.Filter = &f
		}
	}
	if s.Filter != nil || s.FilteredEvents > 0 {
		out.FilteredEvents = &s.FilteredEvents
	}
	if s.UnevaluatedEvents > 0 {
		out.UnevaluatedEvents = &s.UnevaluatedEvents
	}
	h := s.Health
	out.Health = api.SubscriptionHealth{ConsecutiveFailures: h.ConsecutiveFailures, LastSuccessAt: apitime.Ptr(h.LastSuccessAt),
		LastFailureAt: apitime.Ptr(h.LastFailureAt), FailingSince: apitime.Ptr(h.FailingSince), RemovalAt: apitime.Ptr(h.RemovalAt)}
	if h.LastFailure != "" {
		out.Health.LastFailure = &h.LastFailure
	}
	if h.RemovedReason != "" {
		reason := api.SubscriptionHealthRemovedReason(h.RemovedReason)
		out.Health.RemovedReason = &reason
	}
	return out
}

// RotateWebhookSecret implements POST /public/v1/webhooks/{subscriptionId}/secret.
func (s *Server) RotateWebhookSecret(ctx context.Context, req api.RotateWebhookSecretRequestObject) (api.RotateWebhookSecretResponseObject, error) {
	r, err := s.webhooks.RotateSecret(ctx, principal(ctx).AccountID, req.SubscriptionId)
	if err != nil {
		return nil, err
	}
	return api.RotateWebhookSecret200JSONResponse{SubscriptionId: r.SubscriptionID.String(), Secret: r.Secret,
		PreviousSecretExpiresAt: apitime.From(r.PreviousUntil)}, nil
}

// UpdateWebhook implements PATCH /public/v1/webhooks/{subscriptionId}.
func (s *Server) UpdateWebhook(ctx context.Context, req api.UpdateWebhookRequestObject) (api.UpdateWebhookResponseObject, error) {
	account := principal(ctx).AccountID
	if f := req.Body.Filter; f.IsSpecified() && !f.IsNull() && len(f.MustGet()) > 0 && !principal(ctx).Has(auth.ScopeEventsRead) {
		// what a filter lets through shows, event by event, what the events hold
		return nil, apperr.New(apperr.KindForbidden, "Forbidden", "this API key lacks the scope "+auth.ScopeEventsRead+", which setting a filter needs")
	}
	limit := req.Body.MaxDeliveriesPerSecond
	sub, err := s.webhooks.Get(ctx, account, req.SubscriptionId) // nothing to change: as it is
	switch {
	case err != nil:
	case limit.IsNull():
		sub, err = s.webhooks.SetThrottle(ctx, account, req.SubscriptionId, nil)
	case limit.IsSpecified():
		n := limit.MustGet()
		sub, err = s.webhooks.SetThrottle(ctx, account, req.SubscriptionId, &n)
	}
	if err == nil && req.Body.Paused != nil {
		sub, err = s.webhooks.SetPaused(ctx, account, req.SubscriptionId, *req.Body.Paused)
	}
	if err == nil && req.Body.Filter.IsSpecified() {
		var filter map[string]any // null: none
		if !req.Body.Filter.IsNull() {
			filter = req.Body.Filter.MustGet()
		}
		sub, err = s.webhooks.SetFilter(ctx, account, req.SubscriptionId, filter)
	}
	if err != nil {
		return nil, err
	}
	return api.UpdateWebhook200JSONResponse(subscriptionToAPI(sub)), nil
}

// DeleteWebhook implements DELETE /public/v1/webhooks/{subscriptionId}.
func (s *Server) DeleteWebhook(ctx context.Context, req api.DeleteWebhookRequestObject) (api.DeleteWebhookResponseObject, error) {
	if err := s.webhooks.Remove(ctx, principal(ctx).AccountID, req.SubscriptionId); err != nil {
		return nil, err
	}
	return api.DeleteWebhook204Response{}, nil
}

// ListWebhookDeliveries implements GET /public/v1/webhooks/{subscriptionId}/deliveries.
func (s *Server) ListWebhookDeliveries(ctx context.Context, req api.ListWebhookDeliveriesRequestObject) (api.ListWebhookDeliveriesResponseObject, error) {
	limit, cursor := 20, ""
	if req.Params.Limit != nil {
		limit = *req.Params.Limit
	}
	if req.Params.Cursor != nil {
		cursor = *req.Params.Cursor
	}
	attempts, next, err := s.deliveries.Attempts(ctx, principal(ctx).AccountID, req.SubscriptionId, limit, cursor,
		principal(ctx).Has(auth.ScopeEventsRead))
	if err != nil {
		return nil, err
	}
	out := api.DeliveryAttemptList{Attempts: make([]api.DeliveryAttempt, len(attempts))}
	for i, a := range attempts {
		out.Attempts[i] = api.DeliveryAttempt{
			DeliveryId: a.DeliveryID.String(), EventId: a.EventID.String(), EventType: api.EventType(a.EventType),
			Attempt: a.Attempt, AttemptedAt: apitime.From(a.AttemptedAt), ResponseStatus: a.ResponseStatus,
			LatencyMs: int(a.Latency.Milliseconds()), Error: a.Error, NextAttemptAt: apitime.Ptr(a.NextAttemptAt),
			ResponseExcerpt: a.ResponseExcerpt,
		}
	}
	if next != "" {
		out.NextCursor = &next
	}
	return api.ListWebhookDeliveries200JSONResponse(out), nil
}

// RedeliverWebhook implements POST /public/v1/webhooks/{subscriptionId}/deliveries/{deliveryId}/redeliver.
func (s *Server) RedeliverWebhook(ctx context.Context, req api.RedeliverWebhookRequestObject) (api.RedeliverWebhookResponseObject, error) {
	d, err := s.deliveries.Redeliver(ctx, principal(ctx).AccountID, req.SubscriptionId, req.DeliveryId)
	if err != nil {
		return nil, err
	}
	return api.RedeliverWebhook200JSONResponse(deliveryToAPI(d)), nil
}

// SendTestWebhook implements POST /public/v1/webhooks/{subscriptionId}/test.
func (s *Server) SendTestWebhook(ctx context.Context, req api.SendTestWebhookRequestObject) (api.SendTestWebhookResponseObject, error) {
	d, err := s.webhooks.SendTest(ctx, principal(ctx).AccountID, req.SubscriptionId)
	if err != nil {
		return nil, err
	}
	return api.SendTestWebhook200JSONResponse(api.Delivery{DeliveryId: d.DeliveryID.String(), EventId: d.EventID.String(),
		EventType: api.EventType(d.EventType), Status: api.DeliveryStatusPending, Attempts: 0, NextAttemptAt: apitime.Ptr(&d.At)}), nil
}

// ReplayWebhook implements POST /public/v1/webhooks/{subscriptionId}/replay.
func (s *Server) ReplayWebhook(ctx context.Context, req api.ReplayWebhookRequestObject) (api.ReplayWebhookResponseObject, error) {
	since, until := req.Body.Since.Time, req.Body.Until.Time
	n, err := s.deliveries.Replay(ctx, principal(ctx).AccountID, req.SubscriptionId, since, until)
	if err != nil {
		return nil, err
	}
	return api.ReplayWebhook200JSONResponse{SubscriptionId: req.SubscriptionId, Since: apitime.From(since),
		Until: apitime.From(until), Queued: n}, nil
}

func deliveryToAPI(d delivery.Delivery) api.Delivery {
	return api.Delivery{DeliveryId: d.ID.String(), EventId: d.EventID.String(), EventType: api.EventType(d.EventType),
		Status: api.DeliveryStatus(d.Status), Attempts: d.Attempts, NextAttemptAt: apitime.Ptr(d.NextAttemptAt)}
}

// TestWebhookFilter implements POST /public/v1/webhooks/{subscriptionId}/filter-test.
func (s *Server) TestWebhookFilter(ctx context.Context, req api.TestWebhookFilterRequestObject) (api.TestWebhookFilterResponseObject, error) {
	var event json.RawMessage
	if req.Body.Event != nil {
		js, err := json.Marshal(*req.Body.Event)
		if err != nil {
			return nil, err
		}
		event = js
	}
	var filter map[string]any
	if req.Body.Filter != nil {
		filter = *req.Body.Filter
		if filter == nil {
			filter = map[string]any{}
		}
	}
	catalog, err := apicore.Catalog()
	if err != nil {
		return nil, err
	}
	r, err := s.webhooks.TestFilter(ctx, principal(ctx).AccountID, req.SubscriptionId, filter, event, catalog.Example)
	if err != nil {
		return nil, err
	}
	out := api.TestWebhookFilter200JSONResponse{Matches: r.Matches}
	if err := json.Unmarshal(r.Event, &out.Event); err != nil {
		return nil, err
	}
	if r.Filter != nil {
		var f api.WebhookFilter
		if err := json.Unmarshal(r.Filter, &f); err != nil {
			return nil, err
		}
		out.Filter = &f
	}
	return out, nil
}

// ListEventTypes implements GET /public/v1/event-types: the event catalog.
func (s *Server) ListEventTypes(ctx context.Context, _ api.ListEventTypesRequestObject) (api.ListEventTypesResponseObject, error) {
	catalog, err := apicore.Catalog()
	if err != nil {
		return nil, err
	}
	out := api.EventTypeList{EventTypes: make([]api.EventTypeInfo, len(catalog.Types))}
	for i, t := range catalog.Types {
		e := api.EventTypeInfo{EventType: api.EventType(t.Type), Description: t.Description, InfoMember: t.InfoMember, Schema: t.Schema}
		if err := json.Unmarshal(t.Example, &e.Example); err != nil {
			return nil, err
		}
		out.EventTypes[i] = e
	}
	return api.ListEventTypes200JSONResponse(out), nil
}
