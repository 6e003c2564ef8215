package broker

// AlterClientQuotas (key 49), v0-v1.
//
// Sets and removes client quotas, validated as Kafka's controller does
// (controller.ValidateClientQuotaAlterations, ClientQuotaControlManager):
// entity types user, client-id and ip, an IP alone and a valid address or
// resolvable host, keys legal for the entity (producer_byte_rate,
// consumer_byte_rate, request_percentage, controller_mutation_rate;
// connection_creation_rate for IPs), values above 0 and whole for integral
// keys. Every refusal is INVALID_REQUEST with Kafka's message. One result
// per distinct entity: a second entry for the same entity is refused
// ("Ignoring duplicate entity"), and, as in Kafka, replaces the first
// entry's result although the first entry's changes are made.
// validate_only changes nothing.
//
// A single node persists the changes of all accepted entries together in
// gregor-topics.json before the answer, and they are in force at once. In
// cluster mode the active controller writes them as ClientQuotaRecords in
// one metadata log entry (controller.AlterClientQuotas); another node
// forwards the request to it, as a KRaft broker forwards it to the
// controller. Each broker puts them in force when it applies the entry
// (cluster_quotas.go). A failure of the whole request (no controller
// reachable: NOT_CONTROLLER; no majority: REQUEST_TIMED_OUT) is every
// entry's error, as Kafka's AlterClientQuotasRequest.getErrorResponse.
// The byte rates and the connection rate are enforced (package quota,
// throttle.go), the other keys only stored. v1: flexible.

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
