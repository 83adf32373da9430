// Package rawjson holds the small readers and writers of raw JSON values
// that the translators (clowl, multiagent, and the framework adapters) share.
// Values splits outside input into its JSON values, checked by
// adapters.DecodeJSON; the other readers see only input so checked. They
// wrap jsontext and encoding/json and scan nothing themselves.
package rawjson
