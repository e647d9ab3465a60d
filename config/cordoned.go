package config

import (
	"errors"
	"fmt"
	"slices"
)

// validateCordonedLogDirs checks cordoned.log.dirs on its own: distinct
// entries, and * only alone (Config.CordonedDirs checks them against
// log.dirs).
func validateCordonedLogDirs(s string) error {
	items := parseList(s)
	if slices.Contains(items, "*") && len(items) > 1 {
		return errors.New("* must be the only entry")
	}
	return distinctList(true)(s)
}

// ResolveCordonedLogDirs resolves a cordoned.log.dirs value (a dynamic
// one too) against the log directories, as Load does.
func ResolveCordonedLogDirs(value string, logDirs []string) ([]string, error) {
	if err := validateCordonedLogDirs(value); err != nil {
		return nil, fmt.Errorf("%w: cordoned.log.dirs: %w", ErrInvalid, err)
	}
	return cordonedDirs(parseList(value), logDirs)
}

// cordonedDirs resolves cordoned.log.dirs against the log directories:
// * is every one; any other entry must be one of them.
func cordonedDirs(setting []string, logDirs []string) ([]string, error) {
	if slices.Equal(setting, []string{"*"}) {
		return slices.Clone(logDirs), nil
	}
	for _, d := range setting {
		if !slices.Contains(logDirs, d) {
			return nil, fmt.Errorf("%w: cordoned.log.dirs: %s is not in log.dirs", ErrInvalid, d)
		}
	}
	return slices.Clone(setting), nil
}
