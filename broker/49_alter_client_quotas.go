package broker

// AlterClientQuotas (key 49), v0-v1.
//
// Behavior:
//   - validated as Kafka's controller validates (entity types, keys legal
//     for the entity, values); every refusal INVALID_REQUEST with Kafka's
//     message; a duplicate entity is refused and takes the first entry's
//     result, as in Kafka; validate_only changes nothing;
//   - a single node saves accepted changes in gregor-topics.json before
//     the answer; a cluster writes them through the active controller (a
//     node forwards), and each broker applies them with the image
//     (cluster_quotas.go); a whole-request failure is every entry's error;
//   - byte and connection rates are enforced (package quota), other keys
//     stored.
//
// Version notes:
//   - v1 is flexible.
//
// docs/apis.md#alterclientquotas has the details.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/gregor-broker/gregor/coordinator/controller/metadata"
)

func init() { register(49, 0, 1, handleAlterClientQuotas) }

func handleAlterClientQuotas(b *Broker, r *request, req *kmsg.AlterClientQuotasRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.AlterClientQuotasResponse](req)
	alts := make([]controller.QuotaAlteration, 0, len(req.Entries))
	for _, entry := range req.Entries {
		var alt controller.QuotaAlteration
		for _, c := range entry.Entity {
			alt.Entity = append(alt.Entity, metadata.QuotaEntityData{Type: c.Type, Name: c.Name})
		}
		for _, op := range entry.Ops {
			o := controller.QuotaOp{Key: op.Key}
			if !op.Remove {
				v := op.Value
				o.Value = &v
			}
			alt.Ops = append(alt.Ops, o)
		}
		alts = append(alts, alt)
	}

	var results []controller.QuotaResult
	if b.isCluster() {
		fwd, err := b.cluster.controllerCall(r, req, func(ctx context.Context) error {
			var err error
			results, err = b.cluster.ctrl.AlterClientQuotas(ctx, alts, req.ValidateOnly)
			return err
		})
		if fwd != nil {
			return fwd, nil
		}
		if err != nil {
			ke, _ := kerrOf(err)
			msg := ke.Description
			for _, entry := range req.Entries {
				out := kmsg.NewAlterClientQuotasResponseEntry()
				for _, c := range entry.Entity {
					ent := kmsg.NewAlterClientQuotasResponseEntryEntity()
					ent.Type, ent.Name = c.Type, c.Name
					out.Entity = append(out.Entity, ent)
				}
				out.ErrorCode, out.ErrorMessage = ke.Code, &msg
				resp.Entries = append(resp.Entries, out)
			}
			return resp, nil
		}
		if !req.ValidateOnly {
			b.log.Info("altered client quotas through the controller", "entries", len(req.Entries))
		}
	} else {
		results = b.alterLocalQuotas(r.ctx, alts, req.ValidateOnly)
	}

	for _, res := range results {
		out := kmsg.NewAlterClientQuotasResponseEntry()
		for _, c := range res.Entity {
			ent := kmsg.NewAlterClientQuotasResponseEntryEntity()
			ent.Type, ent.Name = c.Type, c.Name
			out.Entity = append(out.Entity, ent)
		}
		if res.Err != nil {
			ke, msg := kerrOf(res.Err)
			out.ErrorCode, out.ErrorMessage = ke.Code, &msg
		}
		resp.Entries = append(resp.Entries, out)
	}
	return resp, nil
}

// alterLocalQuotas is a single node's AlterClientQuotas: the changes of
// every accepted entity are persisted together, then put in force.
func (b *Broker) alterLocalQuotas(ctx context.Context, alts []controller.QuotaAlteration, validateOnly bool) []controller.QuotaResult {
	// Validation needs no state, so it runs without the lock: resolving a
	// host name may take a while.
	results, changes := controller.ValidateClientQuotaAlterations(ctx, alts)
	if validateOnly || len(changes) == 0 {
		return results
	}
	b.mu.Lock()
	old := b.catalog.quotas
	b.catalog.quotas = applyQuotaChanges(old, changes)
	err := b.catalog.save()
	if err != nil {
		b.catalog.quotas = old
	}
	b.mu.Unlock()
	if err != nil {
		b.log.Error("altering client quotas failed", "err", err)
		for i := range results {
			if results[i].Err == nil {
				results[i].Err = &quotaWriteError{err}
			}
		}
		return results
	}
	b.log.Info("altered client quotas", "entities", len(changes))
	b.refreshQuotas(ctx)
	return results
}

// quotaWriteError is UNKNOWN_SERVER_ERROR with the failed write's text as
// its message.
type quotaWriteError struct{ err error }

func (e *quotaWriteError) Error() string { return e.err.Error() }
func (e *quotaWriteError) Unwrap() error { return kerr.UnknownServerError }
