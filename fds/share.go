package fds

// Shares per client address. Most of the time a client may hold what it
// asks for; once more than half the descriptors are held, each client
// address may hold at most a share of them for the work it makes gale
// start (upstream connections, for one), so that one address cannot take
// what the others need.

// shareDiv is the part of the limit one client address may hold on one
// event loop while the budget is pressed.
const shareDiv = 32

// Pressed reports whether more than half the descriptors are held.
func (b *Budget) Pressed() bool { return b != nil && 2*b.used.Load() > b.limit.Load() }

// Share is how many descriptors one client address may hold on one event
// loop while the budget is pressed: a 32nd of the limit, at least 1.
func (b *Budget) Share() int64 {
	if b == nil {
		return 1 << 62
	}
	return max(b.limit.Load()/shareDiv, 1)
}
