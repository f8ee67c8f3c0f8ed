package httpapi

import (
	"context"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/apitime"
	"github.com/contactd/contactd/internal/webhook"
)

// CreateWebhook implements POST /public/v1/webhooks.
func (s *Server) CreateWebhook(ctx context.Context, req api.CreateWebhookRequestObject) (api.CreateWebhookResponseObject, error) {
	sub, err := s.webhooks.Create(ctx, principal(ctx).AccountID, req.Body.Url, webhook.EventType(req.Body.EventType), req.Body.MaxDeliveriesPerSecond)
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

func subscriptionToAPI(s webhook.Subscription) api.WebhookSubscription {
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
	if err != nil {
		return nil, err
	}
	return api.UpdateWebhook200JSONResponse(subscriptionToAPI(sub)), nil
}
