package boltstore

// BeatBound is the longest a beat stays in memory only (presence.go).
const BeatBound = beatBound
