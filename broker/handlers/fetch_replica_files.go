package handlers

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// serveFollowerFetch answers a follower's Fetch through the replica layer.
// When the connection sends files (Request.SendFiles: a plaintext
// inter-broker listener sends them with sendfile, any other copies them in
// bounded chunks) the records stay in the segment files, as for a
// consumer's fetch: replication then moves record bytes from the page
// cache to the socket without copying them through the broker's memory.
func (d *Deps) serveFollowerFetch(r *Request, req *kmsg.FetchRequest) kmsg.Response {
	if !r.SendFiles {
		return d.Replicas.ServeReplicaFetch(context.Background(), req)
	}
	resp, ranges := d.Replicas.ServeReplicaFetchRanges(context.Background(), req)
	if len(ranges) == 0 {
		return resp
	}
	files := make([]PartitionFile, len(ranges))
	for i, rg := range ranges {
		files[i] = PartitionFile{Topic: rg.Topic, Partition: rg.Partition, Slice: rg.Slice}
	}
	return &FileFetch{FetchResponse: resp, Files: files}
}
