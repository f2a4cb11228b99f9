//go:build !race

package records

const raceEnabled = false
