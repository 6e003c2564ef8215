//go:build cluster

package broker

// victimAndSurvivor picks two live brokers of tc for a test that stops one:
// the victim, the lowest id that is not the active controller ctrl (so the
// quorum keeps its leader), and a survivor, another live broker to talk to.
func (tc *testCluster) victimAndSurvivor(ctrl int32) (victim, survivor int32) {
	victim = 1
	for victim == ctrl {
		victim++
	}
	for _, id := range tc.live() {
		if id != victim {
			survivor = id
		}
	}
	return victim, survivor
}
