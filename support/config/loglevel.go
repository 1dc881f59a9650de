package config

import "strconv"

// ValidLogLevel tells a value controller-runtime's --zap-log-level takes:
// debug, info, error, or a verbosity from 1 (info) up.
func ValidLogLevel(level string) bool {
	switch level {
	case "debug", "info", "error":
		return true
	}
	n, err := strconv.Atoi(level)
	return err == nil && n >= 1 && n <= 127
}
