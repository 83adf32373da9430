package driver

// SetHubBuffers makes the hubs made after it give each reader a buffer of
// events and bytes, until the returned func restores the defaults: a test
// runs a store whose readers always fall behind.
func SetHubBuffers(events int, bytes int64) (restore func()) {
	e, b := hubEvents, hubBytes
	hubEvents, hubBytes = events, bytes
	return func() { hubEvents, hubBytes = e, b }
}
