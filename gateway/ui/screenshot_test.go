package ui

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
)

var writeShots = flag.Bool("screenshots", false, "write the UI screenshots to docs/ui-*.png")

// TestScreenshots shows a busy thread (chat, a task with its routing
// decision, a tool call, progress, a retried subtask, results) in the light
// and dark themes and checks each picture; with -screenshots it writes them
// to the module's docs/ folder.
func TestScreenshots(t *testing.T) {
	h := newHarness(t)
	registerTeam(t, h.r)
	task := h.busyThread(h.r)
	h.do(chromedp.EmulateViewport(1280, 760))
	h.signIn("#/thread/" + h.thr)
	h.waitJS(`document.querySelector('#tree-body li[data-task="` + task + `"] li[data-task]') && document.querySelector('#agents li')`)
	h.waitJS(`document.querySelector('#events .ev[data-type="routing.decision"]') && document.querySelector('#events .ev[data-type="tool.call"] .tool-result:not(.pending)')`)

	shots := map[string][]byte{}
	take := func(name, theme string) {
		t.Helper()
		h.do(chromedp.Evaluate[chromedp.Void](`localStorage.setItem("clutch.theme", "` + theme + `"); document.documentElement.dataset.theme = "` + theme + `";
			document.querySelectorAll("#events details.tool").forEach(d => d.open = true);`))
		h.waitJS(`document.getElementById("conn").dataset.state === "live" || document.body.dataset.view === "agent"`)
		png, err := chromedp.Run(h.tab, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(png, []byte("\x89PNG")) || len(png) > 300<<10 {
			t.Fatalf("%s: %d bytes, want a PNG under 300 KB", name, len(png))
		}
		shots[name] = png
	}
	// The decision and the tool call in view.
	h.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('#events .ev[data-type="routing.decision"]').scrollIntoView({block: "start"})`))
	take("ui-light.png", "light")
	h.open("#/run/" + h.run)
	h.waitJS(`document.querySelectorAll(".trow").length === 2`)
	take("ui-dark.png", "dark")
	h.do(chromedp.Click(`#agents li[data-agent="agent:ken"] a`))
	h.waitJS(`document.querySelector(".profile")`)
	take("ui-agent.png", "light")
	h.open("#/task/" + task)
	h.waitJS(`document.querySelector('#tree-body li[data-task="` + task + `"] li[data-task]')`)
	// The delegated subtask: a retryable failure, the retry, the result.
	sub := eval[string](h, `document.querySelector('#tree-body li[data-task="`+task+`"] li[data-task]').dataset.task`)
	h.open("#/task/" + sub)
	take("ui-retry.png", "light")

	h.noCSPViolations()
	if !*writeShots {
		return
	}
	for name, png := range shots {
		if err := os.WriteFile(filepath.Join("..", "..", "docs", name), png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote docs/%s (%d bytes)", name, len(png))
	}
}
