package cluster

// purgeState is the purge fan-out's state (pub/sub).
type purgeState struct{}
