package coordinator

import "strings"

// State is the state of a classic group, with Kafka's names.
//
//	Empty ──join──► PreparingRebalance ──all joined / rebalance timeout──► CompletingRebalance
//	  ▲                 ▲   │                                                  │
//	  │                 │   └── no member left ──► Empty                       │ leader SyncGroup
//	  │                 └───── member joins, leaves, expires ◄── Stable ◄──────┘ (group stored)
//	  └─ Dead: deleted or expired; never left
type State int8

// The classic group states.
const (
	Empty State = iota
	PreparingRebalance
	CompletingRebalance
	Stable
	Dead
)

var stateNames = [...]string{
	Empty:               "Empty",
	PreparingRebalance:  "PreparingRebalance",
	CompletingRebalance: "CompletingRebalance",
	Stable:              "Stable",
	Dead:                "Dead",
}

// String returns Kafka's name of the state, as DescribeGroups and
// ListGroups report it.
func (s State) String() string {
	if s < 0 || int(s) >= len(stateNames) {
		return "Unknown"
	}
	return stateNames[s]
}

// parseState parses a state name case-insensitively, as ListGroups' states
// filter does in Kafka.
func parseState(name string) (State, bool) {
	for i, n := range stateNames {
		if strings.EqualFold(n, name) {
			return State(i), true
		}
	}
	return 0, false
}
