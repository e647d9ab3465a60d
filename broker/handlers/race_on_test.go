//go:build race

package handlers

// raceEnabled: allocation figures under the race detector are not the
// real ones.
const raceEnabled = true
