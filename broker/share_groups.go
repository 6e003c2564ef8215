package broker

// shareGroupsServed reports whether the broker serves share groups
// (KIP-932). Until ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch and
// ShareAcknowledge all work end to end, only tests switch them on
// (Config.testHooks.shareGroups), and no share group key is advertised.
func (b *Broker) shareGroupsServed() bool { return b.cfg.testHooks.shareGroups }
