//go:build !race

package agentdojo

const raceDetector = false
