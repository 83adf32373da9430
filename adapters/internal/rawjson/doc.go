// Package rawjson holds the small readers and writers of raw JSON values
// that the translators (clowl, multiagent, and the framework adapters) share.
// Input reaching them was checked by adapters.DecodeJSON, so they see valid
// JSON only; they wrap jsontext and encoding/json and scan nothing themselves.
package rawjson
