package coordinator

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The checks and timers below are those KIP-848 consumer groups and
// KIP-1071 streams groups share (Kafka's ModernGroup): each group passes
// the member it found (found false when none) and that member's values.

// memberCommitCheck validates an offset commit as Kafka's
// validateOffsetCommit of a modern group: with no member id and a
// negative epoch only an empty group accepts it; a member must exist,
// commit with OffsetCommit v9+ and with its current epoch.
func memberCommitCheck(version int16, epoch int32, memberID string, empty, found bool, memberEpoch int32) int16 {
	if epoch < 0 && memberID == "" && empty {
		return 0
	}
	if !found {
		return kerr.UnknownMemberID.Code
	}
	if version < 9 {
		return kerr.UnsupportedVersion.Code
	}
	if epoch != memberEpoch {
		return kerr.StaleMemberEpoch.Code
	}
	return 0
}

// fetchMemberID is the member an OffsetFetch v9+ names, and whether the
// fetch is an admin one (no member id, negative epoch), which is always
// fine.
func fetchMemberID(memberID *string, epoch int32) (id string, admin bool) {
	if memberID != nil {
		id = *memberID
	}
	return id, id == "" && epoch < 0
}

// memberFetchCheck validates an OffsetFetch v9+ by the member it named.
func memberFetchCheck(epoch int32, found bool, memberEpoch int32) int16 {
	if !found {
		return kerr.UnknownMemberID.Code
	}
	if epoch != memberEpoch {
		return kerr.StaleMemberEpoch.Code
	}
	return 0
}

// earliestDeadline returns the earliest of next and the non-zero ds (zero
// when all are zero).
func earliestDeadline(next time.Time, ds ...time.Time) time.Time {
	for _, d := range ds {
		if !d.IsZero() && (next.IsZero() || d.Before(next)) {
			next = d
		}
	}
	return next
}

// memberDue reports whether a member with these deadlines is to be fenced
// at now, and whether because its session expired (else it did not revoke
// within its rebalance timeout).
func memberDue(now, session, revoke time.Time) (due, expired bool) {
	expired = !session.IsZero() && !now.Before(session)
	late := !revoke.IsZero() && !now.Before(revoke)
	return expired || late, expired
}
