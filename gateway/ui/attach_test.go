package ui

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// TestBrowserArtifactAttachments: an event's artifact_ref attachments are
// buttons that fetch the artifact with the key in a header (never in a
// URL). A text or JSON artifact is shown inline as text, markup and all; any
// artifact is offered as a file of its media type; a ref the store does not
// hold shows an error and leaves the page working.
func TestBrowserArtifactAttachments(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	const text = "line one\n<b>not bold</b><script>window.__pwned = 1</script>"
	textRef, err := h.st.PutArtifact(ctx, "text/plain; charset=utf-8", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	jsonRef, err := h.st.PutArtifact(ctx, "application/json", []byte(`{"answer":42,"list":[1,2]}`))
	if err != nil {
		t.Fatal(err)
	}
	bin := []byte{0x25, 0x50, 0x44, 0x46, 0x00, 0xff, 0x10, 0x80}
	binRef, err := h.st.PutArtifact(ctx, "application/pdf", bin)
	if err != nil {
		t.Fatal(err)
	}
	missing := store.ArtifactRef([]byte("never stored"))

	res := h.msg(protocol.TypeTaskResult, "agent:ken", map[string]string{"summary": "see the files"})
	res.TaskID = "task_attach"
	res.Attachments = []protocol.Attachment{
		{Kind: "artifact_ref", Ref: textRef, MediaType: "text/plain", Name: "notes.txt", Size: int64(len(text))},
		{Kind: "artifact_ref", Ref: jsonRef, MediaType: "application/json", Name: "data.json"},
		{Kind: "artifact_ref", Ref: missing, MediaType: "text/plain", Name: "gone.txt"},
		{Kind: "artifact_ref", Ref: binRef, MediaType: "application/pdf", Name: "../report.pdf"},
	}
	chat := h.chat("agent:ana", "a chat line with a file")
	chat.Attachments = []protocol.Attachment{{Kind: "artifact_ref", Ref: textRef, Name: "again.txt"}}
	h.append(res, chat)

	// Downloads go to a temporary directory, and the browser tells when one
	// has finished.
	dir := t.TempDir()
	done := make(chan *browser.EventDownloadProgress, 8)
	begun := make(chan *browser.EventDownloadWillBegin, 8)
	listen := func(ev any) {
		switch e := ev.(type) {
		case *browser.EventDownloadWillBegin:
			select {
			case begun <- e:
			default:
			}
		case *browser.EventDownloadProgress:
			if e.State == browser.DownloadProgressStateCompleted || e.State == browser.DownloadProgressStateCanceled {
				select {
				case done <- e:
				default:
				}
			}
		}
	}
	// Browser.setDownloadBehavior is sent on the tab's session, which then
	// gets the download events.
	if err := chromedp.Listen(h.tab, listen); err != nil {
		t.Fatal(err)
	}
	yes := true
	h.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
			Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dir, EventsEnabled: &yes})
		return err
	}))

	h.signIn("#/thread/" + h.thr)
	box := func(ref string, i int) string {
		return fmt.Sprintf(`document.querySelectorAll('#events .attachment[data-ref="%s"]')[%d]`, ref, i)
	}
	if n := eval[int](h, `document.querySelectorAll("#events .attachment button.att-btn").length`); n != 5 {
		t.Fatalf("%d attachment buttons, want 5 (four on the result, one on the chat line)", n)
	}

	// A text artifact: fetched and shown as text.
	h.do(chromedp.Click(`#events .attachment[data-ref="` + textRef + `"] button`))
	h.waitJS(box(textRef, 0) + `.dataset.state === "ready"`)
	if got := eval[string](h, box(textRef, 0)+`.querySelector(".att-preview").textContent`); got != text {
		t.Fatalf("preview %q, want %q", got, text)
	}
	if n := eval[int](h, `document.querySelectorAll("#events .attachment b, #events .attachment script").length`); n != 0 {
		t.Fatalf("the artifact's markup became %d elements", n)
	}

	// JSON: pretty-printed.
	h.do(chromedp.Click(`#events .attachment[data-ref="` + jsonRef + `"] button`))
	h.waitJS(box(jsonRef, 0) + `.dataset.state === "ready"`)
	if got := eval[string](h, box(jsonRef, 0)+`.querySelector(".att-preview").textContent`); !strings.Contains(got, `"answer": 42`) {
		t.Fatalf("JSON preview %q", got)
	}

	// A ref the store does not hold: an error where the file would be.
	h.do(chromedp.Click(`#events .attachment[data-ref="` + missing + `"] button`))
	h.waitJS(box(missing, 0) + `.dataset.state === "error"`)
	if msg := eval[string](h, box(missing, 0)+`.querySelector(".att-status").textContent`); !strings.Contains(msg, "404") || !strings.Contains(msg, "no such artifact") {
		t.Fatalf("a missing artifact shows %q, want the 404 and its message", msg)
	}

	// A binary artifact is offered as a file with its media type; the name
	// from the event cannot leave the download directory.
	h.do(chromedp.Click(`#events .attachment[data-ref="` + binRef + `"] button`))
	h.waitJS(box(binRef, 0) + `.dataset.state === "ready"`)
	if typ := eval[string](h, box(binRef, 0)+`.querySelector("a.att-save").type`); typ != "application/pdf" {
		t.Fatalf("offered as %q, want application/pdf", typ)
	}
	var b *browser.EventDownloadWillBegin
	select {
	case b = <-begun:
	case <-time.After(20 * time.Second):
		t.Fatal("clicking a binary artifact started no download")
	}
	if !strings.HasPrefix(b.URL, "blob:") || strings.ContainsAny(b.SuggestedFilename, `/\`) {
		t.Fatalf("download of %q as %q, want an object URL and a plain file name", b.URL, b.SuggestedFilename)
	}
	select {
	case e := <-done:
		if e.State != browser.DownloadProgressStateCompleted {
			t.Fatalf("download ended %s", e.State)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the download did not finish")
	}
	got, err := os.ReadFile(filepath.Join(dir, b.SuggestedFilename))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(bin) {
		t.Fatalf("downloaded %x, want %x", got, bin)
	}

	// The page still works: the chat line's copy of the text artifact.
	h.do(chromedp.Evaluate[chromedp.Void](box(textRef, 1) + `.querySelector("button").click()`))
	h.waitJS(box(textRef, 1) + `.dataset.state === "ready"`)

	if v := eval[string](h, `String(window.__pwned)`); v != "undefined" {
		t.Fatalf("artifact script ran: %s", v)
	}
	for _, u := range eval[[]string](h, `performance.getEntriesByType("resource").map(e => e.name)`) {
		if strings.Contains(u, testKey) || strings.Contains(u, "access_token") {
			t.Fatalf("the key is in a URL: %s", u)
		}
	}
	h.noCSPViolations()
}

// TestBrowserThreadPaging: the sidebar lists the newest page of threads and
// reads older pages (before=next_before) when scrolled to its end, so the
// oldest of 250 threads becomes reachable, and stays after a refresh.
func TestBrowserThreadPaging(t *testing.T) {
	h := newHarness(t)
	const n = 250
	ids := make([]string, n)
	msgs := make([]*protocol.Message, n)
	for i := range n {
		m := h.chat("agent:ken", fmt.Sprintf("thread %d", i))
		m.ThreadID = h.ids.ThreadID()
		ids[i] = m.ThreadID
		msgs[i] = m
	}
	h.append(msgs...)
	oldest := ids[0]
	link := `document.querySelector('#channels a[data-thread="` + oldest + `"]')`

	h.signIn("")
	h.waitJS(`document.getElementById("channels").dataset.threads === "200"`)
	if v := eval[bool](h, `!!`+link); v {
		t.Fatal("the oldest thread is in the first page")
	}
	h.do(chromedp.Evaluate[chromedp.Void](`(() => { const c = document.getElementById("channels"); c.scrollTop = c.scrollHeight; })()`))
	h.waitJS(`document.getElementById("channels").dataset.threads === "250"`)
	h.waitJS(link)
	if v := eval[bool](h, `document.getElementById("threads-more").hidden`); !v {
		t.Fatal("the 'older threads' button is shown at the end of the list")
	}
	got := eval[[]string](h, `Array.from(document.querySelectorAll("#channels a[data-thread]")).map(a => a.dataset.thread)`)
	if len(got) != n || got[0] != ids[n-1] || got[n-1] != oldest {
		t.Fatalf("sidebar holds %d threads from %v to %v, want %d newest first", len(got), got[0], got[len(got)-1], n)
	}

	// A refresh of the newest page keeps the older ones.
	h.do(chromedp.Evaluate[chromedp.Void](`window.__clutch.reloadThreads()`, chromedp.EvalAwaitPromise))
	if c := eval[string](h, `document.getElementById("channels").dataset.threads`); c != "250" {
		t.Fatalf("after a refresh the sidebar lists %s threads", c)
	}
	h.do(chromedp.Click(`#channels a[data-thread="` + oldest + `"]`))
	h.waitJS(`document.getElementById("events").dataset.loaded === "true" && document.getElementById("events").dataset.view === "thread:` + oldest + `"`)
	h.waitJS(`Array.from(document.querySelectorAll("#events .ev")).some(e => e.textContent.includes("thread 0"))`)

	// Signing out forgets the list: another key may see other threads.
	h.do(chromedp.Click("#signout"), chromedp.WaitVisible("#key"))
	if v := eval[string](h, `document.querySelectorAll("#channels a[data-thread]").length + "|" + window.__clutch.state.threadMap.size`); v != "0|0" {
		t.Fatalf("after signing out the sidebar still lists threads (shown|kept = %s)", v)
	}
	h.signIn("")
	h.waitJS(`document.getElementById("channels").dataset.threads === "200" && !document.getElementById("threads-more").hidden`)
}
