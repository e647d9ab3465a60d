//go:build race

package wire

// raceEnabled: allocation figures under the race detector are not the
// real ones, and walking every request version is slow there.
const raceEnabled = true
