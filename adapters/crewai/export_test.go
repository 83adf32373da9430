package crewai

// WebhookToken exposes the Crew's webhook token to the tests.
func WebhookToken(c *Crew) string { return c.token }
