package client

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/rules/rulesapi"
)

// send makes a request with a JSON body (none when in is nil) and decodes
// a JSON answer into out (unless it is nil or the answer has no body).
func (c *Client) send(ctx context.Context, method, path string, q url.Values, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.url(path, q), body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return errorOf(resp)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return nil
	}
	if err := jsonv2.Unmarshal(b, out); err != nil {
		return coded.Wrap(errBadAnswer, path, err)
	}
	return nil
}

// RulesDocuments lists the rules library's documents (GET
// /v1/rules/documents), with their texts when withText.
func (c *Client) RulesDocuments(ctx context.Context, withText bool) (rulesapi.DocumentList, error) {
	var q url.Values
	if withText {
		q = url.Values{"text": {"true"}}
	}
	var out rulesapi.DocumentList
	err := c.send(ctx, http.MethodGet, "/v1/rules/documents", q, nil, &out)
	return out, err
}

// RulesDocument returns one document with its text and constraints.
func (c *Client) RulesDocument(ctx context.Context, id string) (rulesapi.DocumentView, error) {
	var out rulesapi.DocumentView
	err := c.send(ctx, http.MethodGet, "/v1/rules/documents/"+url.PathEscape(id), nil, nil, &out)
	return out, err
}

// RulesDrafts lists the open drafts the caller may review.
func (c *Client) RulesDrafts(ctx context.Context) ([]rulesapi.DraftView, error) {
	var out rulesapi.DraftList
	err := c.send(ctx, http.MethodGet, "/v1/rules/drafts", nil, nil, &out)
	return out.Drafts, err
}

// RulesApprove approves an author's draft: it is published.
func (c *Client) RulesApprove(ctx context.Context, author, id string) (rulesapi.Approved, error) {
	var out rulesapi.Approved
	err := c.send(ctx, http.MethodPost, "/v1/rules/drafts/approve", nil, rulesapi.Review{Author: author, ID: id}, &out)
	return out, err
}

// RulesReject rejects an author's draft with a reason.
func (c *Client) RulesReject(ctx context.Context, author, id, reason string) error {
	return c.send(ctx, http.MethodPost, "/v1/rules/drafts/reject", nil, rulesapi.Review{Author: author, ID: id, Reason: reason}, nil)
}

// RulesImport imports a folder, given as its files.
func (c *Client) RulesImport(ctx context.Context, in rulesapi.Import) (rulesapi.Imported, error) {
	var out rulesapi.Imported
	err := c.send(ctx, http.MethodPost, "/v1/rules/import", nil, in, &out)
	return out, err
}
