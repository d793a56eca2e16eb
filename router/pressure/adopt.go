package pressure

// Adopt carries every member sample of old into c whose identity is unchanged: the same tier,
// member ID, endpoint, served model and engine (a page read by another adapter is another
// reading), and the same capacity (a sample is normalized against the
// member ceiling, so a member whose ceiling moved reads unknown until its next refresh, which is due
// at once). A member new to c reads unknown until its first refresh. Refreshes queued or running in
// old are not carried: c schedules its own, and a late completion of an old job is ignored by c (its
// sequence numbers continue old's, so no old job can match). old is not changed. The production
// shell calls it under its lock when a reload swaps cores; the simulator calls it directly.
func (c *Core) Adopt(old *Core) {
	if old == nil {
		return
	}
	c.nextSeq = max(c.nextSeq, old.nextSeq)
	for i := range c.members {
		m := &c.members[i]
		j, ok := old.keys[memberKey{m.tier, m.id}]
		if !ok {
			continue
		}
		o := &old.members[j]
		if o.endpoint != m.endpoint || o.model != m.model || o.engine != m.engine || o.capacity != m.capacity {
			continue
		}
		m.completed, m.lastCompleted = o.completed, o.lastCompleted
		m.sampled, m.observedAt, m.young, m.old = o.sampled, o.observedAt, o.young, o.old
	}
}
