package diff

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// scriptShareFetch drives the share sessions of ShareFetch and
// ShareAcknowledge (KIP-932) on the partition leader, at every version:
// a fetch and an acknowledgement without a session, opening a session
// with no partitions, acknowledging at epoch 0 (never valid) and at the
// session's epoch, a wrong epoch, and closing it. Fetching records needs
// a share group assigned the partition (its state initialized), which
// the share group sections set up.
func scriptShareFetch(s *Session) error {
	each(kmsg.ShareFetch, func(v int16) {
		group, member := "diff-sf", fmt.Sprintf("diff-sf-member-v%d-000001", v)
		fetch := func(name string, epoch int32) {
			f := kmsg.NewPtrShareFetchRequest()
			f.GroupID, f.MemberID, f.ShareSessionEpoch = &group, &member, epoch
			f.MaxBytes, f.MaxRecords, f.BatchSize = 1<<20, 500, 500
			s.Do(name, v, f)
		}
		ack := func(name string, epoch int32) {
			a := kmsg.NewPtrShareAcknowledgeRequest()
			a.GroupID, a.MemberID, a.ShareSessionEpoch = &group, &member, epoch
			s.Do(name, clamp(kmsg.ShareAcknowledge, v), a)
		}
		fetch("no-session", 1)
		fetch("close-no-session", -1)
		ack("ack-no-session", 1)
		fetch("open", 0)
		ack("ack-epoch-0", 0)
		ack("ack", 1)
		fetch("wrong-epoch", 7)
		fetch("next", 2)
		fetch("close", -1)
		fetch("after-close", 3)
	})
	return nil
}
