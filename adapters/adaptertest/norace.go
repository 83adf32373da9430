//go:build !race

package adaptertest

// raceDetector is true in a build with the race detector.
const raceDetector = false
