//go:build !linux

package main

import "time"

// precisePacing is time.Sleep where no thread nanosleep is wired up (see
// pacer_linux.go for why Linux has one).
func precisePacing() (sleep func(time.Duration), done func()) {
	return time.Sleep, func() {}
}
