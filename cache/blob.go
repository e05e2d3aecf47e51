package cache

// BlobMin is the smallest body the cache also keeps in a Blob. Below it,
// one writev of head and body from memory costs less server CPU than a
// send of the head and a sendfile(2) of the body: on Linux 6.18 over
// loopback, sendfile from a memfd cost 14-35% more at 16 KiB, 0-10% more
// at 64-96 KiB, and 18-45% less from 128 KiB up (the per-page work of
// splicing shmem pages outweighs the copy it saves until then). See
// bench/results/2026-12-06-static-sendfile.md.
const BlobMin = 128 << 10

// blobCharge is what a Blob of size bytes costs the byte budget: its pages
// besides the heap copy in Rep.Body, and a fixed overhead.
func blobCharge(b *Blob) int64 {
	if b == nil {
		return 0
	}
	return b.size + 128
}

// addBlob gives r a Blob of its body when the body is large enough and a
// descriptor is free, and returns what it adds to the budget.
func (c *Cache) addBlob(r *Rep) int64 {
	if r.Body == nil || int64(len(r.Body)) < BlobMin {
		return 0
	}
	r.Blob = newBlob(r.Body, c.budget)
	return blobCharge(r.Blob)
}
