package boltstore_test

func crashChild() bool { return false }
