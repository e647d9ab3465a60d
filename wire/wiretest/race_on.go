//go:build race

package wiretest

// RaceEnabled reports a build with the race detector, whose allocation
// figures are not the real ones (tests skip their bounds then).
const RaceEnabled = true
