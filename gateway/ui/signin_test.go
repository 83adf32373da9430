package ui

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// TestBrowserSignInAndTheme: a wrong key is refused with a message, the
// right one is kept for the tab only and never put in a URL; the theme
// follows prefers-color-scheme until the toggle picks one.
func TestBrowserSignInAndTheme(t *testing.T) {
	h := newHarness(t)
	h.append(h.chat("agent:ken", "hello"))
	h.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}})
		return err
	}))

	h.do(chromedp.Navigate(h.url), chromedp.WaitVisible("#key"),
		chromedp.SendKeys("#key", "not-the-key-0123456789"), chromedp.Click("#signin-btn"))
	h.waitJS(`document.getElementById("signin-error").textContent !== ""`)
	if v := eval[bool](h, `!document.getElementById("signin").hidden && sessionStorage.getItem("clutch.apiKey") === null`); !v {
		t.Fatal("a wrong key signed in or was kept")
	}

	h.signIn("#/thread/" + h.thr)
	h.waitJS(`document.getElementById("conn").dataset.state === "live"`)
	if v := eval[string](h, `sessionStorage.getItem("clutch.apiKey") + "|" + localStorage.getItem("clutch.apiKey")`); v != testKey+"|null" {
		t.Fatalf("key storage: session|local = %q, want it in sessionStorage only", v)
	}
	urls := eval[[]string](h, `performance.getEntriesByType("resource").map(e => e.name).concat([location.href])`)
	for _, u := range urls {
		if strings.Contains(u, testKey) || strings.Contains(u, "access_token") {
			t.Fatalf("the key is in a URL: %s", u)
		}
	}

	if th := eval[string](h, `document.documentElement.dataset.theme`); th != "dark" {
		t.Fatalf("theme %q under prefers-color-scheme: dark", th)
	}
	bg := eval[string](h, `getComputedStyle(document.body).backgroundColor`)
	h.do(chromedp.Click("#theme-toggle"))
	if th := eval[string](h, `document.documentElement.dataset.theme + "|" + localStorage.getItem("clutch.theme")`); th != "light|light" {
		t.Fatalf("after the toggle: theme|saved = %q, want light|light", th)
	}
	if bg2 := eval[string](h, `getComputedStyle(document.body).backgroundColor`); bg2 == bg {
		t.Fatalf("the toggle left the background at %s", bg)
	}

	h.do(chromedp.Click("#signout"), chromedp.WaitVisible("#key"))
	if v := eval[bool](h, `sessionStorage.getItem("clutch.apiKey") === null && document.getElementById("conn").dataset.state === "idle"`); !v {
		t.Fatal("signing out kept the key or the stream")
	}
}

// TestBrowserKeyChanged: a tab whose key the server no longer accepts
// (a restart with a new key) is signed out saying why, not told its key
// "was not accepted" as if it had been mistyped.
func TestBrowserKeyChanged(t *testing.T) {
	h := newHarness(t)
	h.signIn("")
	h.do(chromedp.Evaluate[chromedp.Void](`sessionStorage.setItem("clutch.apiKey", "the-old-key-0123456789")`), chromedp.Reload(), chromedp.WaitVisible("#key"))
	h.waitJS(`!document.getElementById("signin").hidden && document.getElementById("signin-error").textContent.includes("restarted with a new one")`)
	if v := eval[bool](h, `sessionStorage.getItem("clutch.apiKey") === null`); !v {
		t.Fatal("the refused key is kept")
	}
}
