package broker

import (
	"github.com/gregor-broker/gregor/broker/quota"
	"github.com/gregor-broker/gregor/coordinator/controller/metadata"
)

// Client quotas in cluster mode live in the metadata log (ClientQuotaRecord,
// written by the active controller: 49_alter_client_quotas.go). Every
// broker, as Kafka's ClientQuotaMetadataManager, takes them from each image
// it applies: DescribeClientQuotas answers from them, and the byte-rate
// and connection-rate quotas are put in force (refreshQuotas) whenever an
// applied image changes them.

// syncQuotas takes im's client quotas when they differ from the last
// image's. It runs on the goroutine that applies images (syncImage).
func (c *cluster) syncQuotas(im *metadata.Image) {
	next := quotasOf(im.ClientQuotas)
	if cur := c.quotas.Load(); cur != nil && quota.Equal(*cur, next) {
		return
	}
	c.quotas.Store(&next)
	c.b.refreshQuotas(c.ctx)
}

// storedQuotas are the client quotas in force: a single node's catalogue,
// or the applied image's in cluster mode. The map is replaced, never
// changed in place, so the caller may read it without a lock.
func (b *Broker) storedQuotas() map[quota.Entity]map[string]float64 {
	if b.isCluster() {
		if q := b.cluster.quotas.Load(); q != nil {
			return *q
		}
		return nil
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.catalog.quotas
}
