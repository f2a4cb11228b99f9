package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/ferry-mq/ferry/test/harness"
)

// Helpers for the admin page's browser tests: a headless Chromium per
// test (Debian's /usr/bin/chromium, flags as TESTING.md says), JavaScript
// exceptions turned into test failures, and screenshots saved as artifacts.

const chromiumPath = "/usr/bin/chromium"

// uiTimeout bounds every wait on the page; the machine is shared and slow at times.
const uiTimeout = 30 * time.Second

type browser struct {
	t   *testing.T
	ctx context.Context
	mu  sync.Mutex
	js  []string // uncaught exceptions and console errors
}

// newBrowser starts Chromium for t; it fails when CI is set and Chromium
// cannot start, and skips otherwise. Tests call it first, so a missing
// Chromium skips before a ferry is started.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		noBrowser(t, fmt.Errorf("%s: %v (scripts/install-test-deps.sh installs chromium)", chromiumPath, err))
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 800),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	b := &browser{t: t}
	ctx, cancelCtx := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf), chromedp.WithListener(b.onEvent))
	b.ctx = ctx
	// Cancelling the allocator kills the Chromium process this test started.
	t.Cleanup(func() { cancelCtx(); cancelAlloc() })
	// The first run starts the browser; it must not carry a timeout (that
	// would stop the browser with it), so a watchdog bounds it instead.
	started := make(chan error, 1)
	go func() {
		started <- chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800), chromedp.Navigate("about:blank"))
	}()
	select {
	case err := <-started:
		if err != nil {
			noBrowser(t, err)
		}
	case <-time.After(uiTimeout):
		cancelCtx()
		noBrowser(t, fmt.Errorf("no answer from chromium within %v", uiTimeout))
	}
	t.Cleanup(func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, e := range b.js {
			t.Errorf("page JavaScript: %s", e)
		}
	})
	return b
}

func noBrowser(t *testing.T, err error) {
	t.Helper()
	harness.RequireService(t, "Chromium", err)
}

// onEvent collects uncaught exceptions and console errors; it runs on
// chromedp's event goroutine, so it only appends under the lock.
func (b *browser) onEvent(ev any) {
	switch ev := ev.(type) {
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		msg := d.Text
		if d.Exception != nil {
			msg += " " + d.Exception.Description
		}
		b.record(fmt.Sprintf("uncaught exception at %s:%d: %s", d.URL, d.LineNumber+1, msg))
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError {
			var parts []string
			for _, a := range ev.Args {
				if a.Description != "" {
					parts = append(parts, a.Description)
				} else {
					parts = append(parts, fmt.Sprint(a.Value))
				}
			}
			b.record("console.error: " + strings.Join(parts, " "))
		}
	}
}

func (b *browser) record(msg string) {
	b.mu.Lock()
	b.js = append(b.js, msg)
	b.mu.Unlock()
}

// run performs actions with the wait timeout, failing the test with what
// the step was for.
func (b *browser) run(step string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, uiTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("timed out after %v: %w", uiTimeout, err)
		}
		pctx, pcancel := context.WithTimeout(b.ctx, 5*time.Second)
		page, _ := chromedp.Run(pctx, chromedp.Text(chromedp.CSS("#view")))
		pcancel()
		b.screenshot("failed-" + sanitize(step))
		b.t.Fatalf("%s: %v\npage text:\n%s", step, err, page)
	}
}

// eval evaluates a JavaScript expression and returns its value.
func eval[T any](b *browser, step, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, uiTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("%s: %v", step, err)
	}
	return v
}

// evalAsync evaluates expr (an await-using expression) wrapped by the
// format wrapper, waiting for the promise.
func evalAsync[T any](b *browser, expr, wrapper string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, uiTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](fmt.Sprintf(wrapper, expr), chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// fillIn replaces a field's value and fires input, as typing would.
func fillIn(sel, value string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		chromedp.WaitVisible(chromedp.CSS(sel)),
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(
			`(() => { const e = document.querySelector(%q); e.value = %q; e.dispatchEvent(new Event('input', {bubbles: true})); })()`, sel, value)))
}

// choose sets a <select>'s value and fires change, as a person picking it does.
func choose(sel, value string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(
		`(() => { const e = document.querySelector(%q); e.value = %q; e.dispatchEvent(new Event('change', {bubbles: true})); })()`, sel, value))
}

// waitText polls until the element matching sel contains want.
func (b *browser) waitText(sel, want string) {
	b.t.Helper()
	js := fmt.Sprintf(`(() => { const e = document.querySelector(%q); return !!e && e.textContent.includes(%q); })()`, sel, want)
	b.run(fmt.Sprintf("wait for %q in %s", want, sel), chromedp.Poll[chromedp.Void](js, chromedp.WithPollingTimeout(uiTimeout)))
}

// artifactsDir is FERRY_TEST_ARTIFACTS/<test>, or a temp dir.
func artifactsDir(t *testing.T) string {
	dir := os.Getenv("FERRY_TEST_ARTIFACTS")
	if dir == "" {
		return t.TempDir()
	}
	dir = filepath.Join(dir, sanitize(t.Name()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

var artifactDirs sync.Map // test name → dir

// screenshot saves the viewport (1280×800) as <name>.png among the artifacts.
func (b *browser) screenshot(name string) {
	dirAny, ok := artifactDirs.Load(b.t.Name())
	if !ok {
		dirAny, _ = artifactDirs.LoadOrStore(b.t.Name(), artifactsDir(b.t))
	}
	ctx, cancel := context.WithTimeout(b.ctx, uiTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return
	}
	path := filepath.Join(dirAny.(string), name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return
	}
	b.t.Logf("screenshot: %s", path)
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}
