package partition

// HasTxnGuard reports whether guard is still producer pid's verification
// in p.
func (p *Partition) HasTxnGuard(pid int64, guard uint64) bool {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	g, ok := p.txnGuards[pid]
	return ok && g == guard
}

// SetTxnGuard records guard as the verification of producer pid's
// transaction in p.
func (p *Partition) SetTxnGuard(pid int64, guard uint64) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if p.txnGuards == nil {
		p.txnGuards = map[int64]uint64{}
	}
	p.txnGuards[pid] = guard
}

// TxnOpenAt reports whether producer pid has a transaction open in p at
// epoch.
func (p *Partition) TxnOpenAt(pid int64, epoch int16) bool {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	e := p.producers.byID[pid]
	return e != nil && e.txnFirstOffset >= 0 && e.epoch == epoch
}
