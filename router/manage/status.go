package manage

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"

	"github.com/anvil-llm/anvil/router/ident"
)

// AdmissionPath is the admission view: every configured tier's admission snapshot, in the
// configuration's order.
const AdmissionPath = "/admin/v1/admission"

// Tiers lists the router's configured tier IDs, in its order, from the admission view.
func (c *Client) Tiers(ctx context.Context) ([]string, error) {
	data, err := c.fetch(ctx, http.MethodGet, AdmissionPath, nil)
	if err != nil {
		return nil, err
	}
	var rows []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(data, &rows); err != nil {
		return nil, &TransportError{TransportBadReply}
	}
	out := make([]string, 0, len(rows))
	for _, r := range rows {
		if !ident.ValidID(r.ID) {
			return nil, &TransportError{TransportBadReply}
		}
		out = append(out, r.ID)
	}
	return out, nil
}

// StatusAll is the all-tier status: the router's tier list, then one status transition per tier,
// in the router's order, then one per tier not configured whose intent the router keeps
// (ConfigStatus.KeptTiers, in ID order: shown quiesced, not configured). Each answer is one tier's
// own consistent snapshot; the tiers are read one after another, not at one instant. The kept
// tiers come from the config view, which only the admin token reads: with an observer token
// (refused 403 there) the configured tiers are shown alone.
func (c *Client) StatusAll(ctx context.Context) ([]Response, error) {
	tiers, err := c.Tiers(ctx)
	if err != nil {
		return nil, err
	}
	cfg, err := c.Config(ctx)
	var refused *Refusal
	if errors.As(err, &refused) && refused.Status == http.StatusForbidden {
		cfg, err = ConfigStatus{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]Response, 0, len(tiers)+len(cfg.KeptTiers))
	for _, id := range tiers {
		resp, err := c.Transition(ctx, Request{Action: ActionStatus, Tier: id})
		if err != nil {
			return nil, err
		}
		out = append(out, resp)
	}
	for _, id := range cfg.KeptTiers {
		if slices.Contains(tiers, id) {
			continue // configured again by a reload between the two reads: already shown
		}
		resp, err := c.Transition(ctx, Request{Action: ActionStatus, Tier: id})
		var r *Refusal
		if errors.As(err, &r) && r.Status == http.StatusNotFound {
			continue // readmitted between the reads: nothing kept any more
		}
		if err != nil {
			return nil, err
		}
		out = append(out, resp)
	}
	return out, nil
}
