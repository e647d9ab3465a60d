//go:build race

package storage

// raceEnabled: allocation figures under the race detector are not the
// real ones.
const raceEnabled = true
