package httpapi

import (
	"context"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/apitime"
	"github.com/contactd/contactd/internal/delivery"
)

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
	attempts, next, err := s.deliveries.Attempts(ctx, principal(ctx).AccountID, req.SubscriptionId, limit, cursor)
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

func deliveryToAPI(d delivery.Delivery) api.Delivery {
	return api.Delivery{DeliveryId: d.ID.String(), EventId: d.EventID.String(), EventType: api.EventType(d.EventType),
		Status: api.DeliveryStatus(d.Status), Attempts: d.Attempts, NextAttemptAt: apitime.Ptr(d.NextAttemptAt)}
}

// SendTestWebhook implements POST /public/v1/webhooks/{subscriptionId}/test.
func (s *Server) SendTestWebhook(ctx context.Context, req api.SendTestWebhookRequestObject) (api.SendTestWebhookResponseObject, error) {
	d, err := s.webhooks.SendTest(ctx, principal(ctx).AccountID, req.SubscriptionId, s.deliveries)
	if err != nil {
		return nil, err
	}
	return api.SendTestWebhook200JSONResponse(api.Delivery{DeliveryId: d.DeliveryID.String(), EventId: d.EventID.String(),
		EventType: api.EventType(d.EventType), Status: api.DeliveryStatusPending, Attempts: 0, NextAttemptAt: apitime.Ptr(&d.At)}), nil
}
