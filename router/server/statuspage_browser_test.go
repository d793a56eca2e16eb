package server_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/internal/machinetool"
	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/config/load"
	"github.com/anvil-llm/anvil/router/manage"
	"github.com/anvil-llm/anvil/router/server"
	"github.com/anvil-llm/anvil/router/statuspage"
)

// screenshotDir is where the browser test writes its screenshots (git-ignored); README's two come
// from here (docs/images/).
const screenshotDir = "screenshots"

// chromium is the browser the status page's browser test drives (Debian's chromium package, which
// .ci/run installs).
var chromium = machinetool.Tool{Name: "Chromium", Commands: []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"},
	Package: "chromium", Needed: "the status page's browser test"}

// browserPath finds a Chromium: without one the test skips, except under CI, where it fails.
func browserPath(t *testing.T) string {
	t.Helper()
	return machinetool.Find(t, chromium)
}

// pageRouter is a real router on loopback for the browser: every request it serves is recorded
// (path, query, whether it carried a cookie and which bearer token), and each capacity read, which
// the page makes once per refresh, kicks the light load while it is on.
type pageRouter struct {
	srv    *server.Server
	http   *httptest.Server
	kick   chan struct{}
	loadOn atomic.Bool
	path   string // the config file, reloaded through a load.Source as serve does

	mu   sync.Mutex
	seen []seenRequest
}

type seenRequest struct {
	method, path, query, token string
	cookie                     bool
}

func startPageRouter(t *testing.T, yaml string) *pageRouter {
	t.Helper()
	path := filepath.Join(t.TempDir(), "router.yaml")
	require.NoError(t, os.WriteFile(path, []byte(yaml), 0o600))
	src := load.NewSource(path, env)
	loaded, err := src.Load(t.Context())
	require.NoError(t, err)
	srv, err := server.New(loaded.Config, server.Options{ConfigPath: path, ConfigDigest: loaded.Digest,
		Load: func(ctx context.Context) (config.Config, string, error) {
			l, err := src.Load(ctx)
			return l.Config, l.Digest, err
		}})
	require.NoError(t, err)
	srv.Start()
	srv.ProbeNow(t.Context())
	pr := &pageRouter{srv: srv, kick: make(chan struct{}, 1), path: path}
	h := srv.Handler()
	pr.http = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		token, _ := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
		pr.mu.Lock()
		pr.seen = append(pr.seen, seenRequest{req.Method, req.URL.Path, req.URL.RawQuery, token, req.Header.Get("Cookie") != ""})
		pr.mu.Unlock()
		if req.URL.Path == "/admin/v1/capacity" && pr.loadOn.Load() {
			select {
			case pr.kick <- struct{}{}:
			default:
			}
		}
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(func() {
		pr.http.CloseClientConnections()
		pr.http.Close()
		_ = srv.Close()
	})
	return pr
}

// reload replaces the config file with yaml (atomically) and reloads it, returning the status.
func (pr *pageRouter) reload(t *testing.T, yaml string) int {
	t.Helper()
	tmp := pr.path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, []byte(yaml), 0o600))
	require.NoError(t, os.Rename(tmp, pr.path))
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, pr.http.URL+manage.ReloadPath, strings.NewReader("{}"))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

func (pr *pageRouter) requests() []seenRequest {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return append([]seenRequest(nil), pr.seen...)
}

// chat sends one small non-streaming request for alias and returns its status.
func (pr *pageRouter) chat(ctx context.Context, alias string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, pr.http.URL+"/v1/chat/completions", strings.NewReader(bodyFor(alias, 2, false)))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+callerToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// runLoad is the light load: one request per alias each time the page reads the capacity JSON while
// the load is on. A channel sent on barrier is closed between two rounds: once the load is off, the
// round in flight (if any) has finished when it closes.
func (pr *pageRouter) runLoad(ctx context.Context, barrier <-chan chan struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case done := <-barrier:
			close(done)
		case <-pr.kick:
			if !pr.loadOn.Load() {
				continue
			}
			for _, alias := range []string{"chat", "spread", "big"} {
				_, _ = pr.chat(ctx, alias)
			}
		}
	}
}

// capacityDoc reads the capacity JSON as the page does.
func (pr *pageRouter) capacityDoc(t *testing.T) capacityJSON {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, pr.http.URL+"/admin/v1/capacity", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var doc capacityJSON
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&doc))
	return doc
}

type capacityJSON struct {
	Tiers []struct {
		ID       string `json:"id"`
		Kind     string `json:"kind"`
		Strategy string `json:"strategy"`
		State    string `json:"state"`
		Draining bool   `json:"draining"`
		Active   int64  `json:"active_requests"`
		Ceiling  int64  `json:"max_concurrency"`
		Members  []struct {
			ID        string `json:"id"`
			State     string `json:"state"`
			Draining  bool   `json:"draining"`
			Active    int64  `json:"active_requests"`
			Ceiling   int64  `json:"max_concurrency"`
			Telemetry *struct {
				Freshness string `json:"freshness"`
			} `json:"telemetry"`
		} `json:"members"`
	} `json:"tiers"`
}

// shownTier is what the page shows of one tier, read from its DOM.
type shownTier struct {
	ID      string        `json:"id"`
	Meta    string        `json:"meta"`
	State   []string      `json:"state"`
	Active  string        `json:"active"`
	Rates   []string      `json:"rates"`
	Members []shownMember `json:"members"`
}

type shownMember struct {
	ID        string   `json:"id"`
	State     []string `json:"state"`
	Active    string   `json:"active"`
	Telemetry string   `json:"telemetry"`
	Pressure  string   `json:"pressure"`
	Routed    string   `json:"routed"`
	Outcome   string   `json:"outcome"`
}

// readPage is the page's tiers as text, straight from the DOM.
const readPage = `[...document.querySelectorAll("#tiers section.tier")].map(card => ({
  id: card.querySelector("h2 .id").textContent,
  meta: card.querySelector("h2 .meta").textContent,
  state: [...card.querySelectorAll('dd[data-field="state"] .badge')].map(b => b.textContent),
  active: card.querySelector('dd[data-field="active"] .num').textContent,
  rates: ["refusals", "success", "p50", "p99"].map(f => card.querySelector('dd[data-field="' + f + '"]').textContent),
  members: [...card.querySelectorAll("tr[data-member]")].map(row => {
    const cell = f => row.querySelector('td[data-field="' + f + '"]');
    return {
      id: cell("id").textContent,
      state: [...cell("state").querySelectorAll(".badge")].map(b => b.textContent),
      active: cell("active").querySelector(".num").textContent,
      telemetry: cell("telemetry").textContent,
      pressure: cell("pressure").textContent,
      routed: cell("routed").textContent,
      outcome: cell("outcome").textContent,
    };
  }),
}))`

func ceilingText(active, ceiling int64) string {
	if ceiling > 0 {
		return fmt.Sprintf("%d / %d", active, ceiling)
	}
	return fmt.Sprintf("%d / no ceiling", active)
}

func stateText(state string, draining bool) string {
	if draining {
		return "draining"
	}
	return state
}

// plantedScript is the inline script the browser test puts in the page to see the CSP block it.
const plantedScript = "window.__inlineRan = 1"

// TestStatusPageInABrowser drives the status page in headless Chromium against a real router with
// real fake-vLLM members under light load: sign-in (a wrong token first), tiers and members as the
// capacity JSON has them, the quiesce / drain / readmit flow through the buttons with its dry-run
// preview, the page's arithmetic, escaping, pausing while hidden, screenshots at two widths,
// sign-out; and through all of it, no request outside the router, no script error, no CSP
// violation, and the token only ever in the Authorization header.
func TestStatusPageInABrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	chrome := browserPath(t)
	direct, rr, pool := startMember(t, servedModel, 7), startMembers(t, 2), startMembers(t, 2)
	pr := startPageRouter(t, mixedYAML(direct, rr, pool))
	base := pr.http.URL

	loadCtx, stopLoad := context.WithCancel(t.Context())
	barrier := make(chan chan struct{})
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		pr.runLoad(loadCtx, barrier)
	}()
	t.Cleanup(func() { stopLoad(); <-loadDone })
	pauseLoad := func() {
		pr.loadOn.Store(false)
		done := make(chan struct{})
		barrier <- done
		<-done
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.WindowSize(1280, 900))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(t.Context(), opts...)
	defer cancelAlloc()
	ctx, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()

	// Every request the page makes, every uncaught script error and every CSP report, as the
	// browser announces them.
	// The page's own answer headers as the browser received them are kept too. The CSP step plants
	// one inline script on purpose: the report that names its hash goes to planted, not problems.
	sum := sha256.Sum256([]byte(plantedScript))
	plantedHash := "sha256-" + base64.StdEncoding.EncodeToString(sum[:]) // Chromium names it in the report
	var eventsMu sync.Mutex
	var urls, problems []string
	planted := make(chan string, 1)
	docHeaders := map[string]string{}
	require.NoError(t, chromedp.Listen(ctx, func(ev any) {
		eventsMu.Lock()
		defer eventsMu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			urls = append(urls, e.Request.URL)
		case *network.EventResponseReceived:
			if e.Type == network.ResourceTypeDocument && e.Response.URL == base+"/admin/ui/" {
				for k, v := range e.Response.Headers {
					if s, ok := v.(string); ok {
						docHeaders[strings.ToLower(k)] = s
					}
				}
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+e.ExceptionDetails.Text)
		case *cdplog.EventEntryAdded:
			if e.Entry.Source == cdplog.EntrySourceSecurity || strings.Contains(e.Entry.Text, "Content Security Policy") {
				if strings.Contains(e.Entry.Text, plantedHash) {
					select {
					case planted <- e.Entry.Text:
					default:
					}
				} else {
					problems = append(problems, "security: "+e.Entry.Text)
				}
			}
		}
	}))
	defer func() { // also when a step fails and ends the test early
		eventsMu.Lock()
		defer eventsMu.Unlock()
		assert.Empty(t, problems, "no script error and no CSP violation")
	}()
	_, err := chromedp.Call(ctx, network.Enable, network.EnableParams{})
	require.NoError(t, err)
	_, err = chromedp.Call(ctx, runtime.Enable, cdp.Empty{})
	require.NoError(t, err)
	_, err = chromedp.Call(ctx, cdplog.Enable, cdp.Empty{})
	require.NoError(t, err)

	// bounded gives one group of actions a bound, so a page that never reaches a state fails the
	// test instead of hanging it; it measures nothing.
	bounded := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, time.Minute) }
	run := func(t *testing.T, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		bctx, cancel := bounded()
		defer cancel()
		require.NoError(t, chromedp.Do(bctx, steps...))
	}
	text := func(t *testing.T, sel string) string {
		t.Helper()
		bctx, cancel := bounded()
		defer cancel()
		out, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(sel)))
		require.NoError(t, err, sel)
		return out
	}
	eval := func(t *testing.T, expr string) string {
		t.Helper()
		bctx, cancel := bounded()
		defer cancel()
		out, err := chromedp.Run(bctx, chromedp.Evaluate[string](expr))
		require.NoError(t, err, expr)
		return out
	}
	rendered := func(t *testing.T) int {
		t.Helper()
		bctx, cancel := bounded()
		defer cancel()
		out, err := chromedp.Run(bctx, chromedp.Evaluate[int]("window.anvilStatus.rendered()"))
		require.NoError(t, err)
		return out
	}
	// step runs one subtest; the ones after it build on its state, so a failure ends the test.
	step := func(name string, fn func(t *testing.T)) {
		if !t.Run(name, fn) {
			t.FailNow()
		}
	}
	// settle waits until the page has rendered twice more: the second read began after this call,
	// so it shows state at least as new as the moment of the call.
	settle := func(t *testing.T) {
		t.Helper()
		want := rendered(t) + 2
		run(t, chromedp.Poll[chromedp.Void](fmt.Sprintf("window.anvilStatus.rendered() >= %d", want)))
	}
	shown := func(t *testing.T) []shownTier {
		t.Helper()
		var tiers []shownTier
		require.NoError(t, json.Unmarshal([]byte(eval(t, "JSON.stringify("+readPage+")")), &tiers))
		return tiers
	}
	stored := func(t *testing.T) string {
		t.Helper()
		return eval(t, `String(sessionStorage.getItem("anvil.adminToken"))`)
	}
	memberRow := func(tier, member string) string {
		return fmt.Sprintf(`section.tier[data-tier=%q] tr[data-member=%q]`, tier, member)
	}
	button := func(action, tier, member string) chromedp.CSS {
		return chromedp.CSS(fmt.Sprintf(`button[data-action=%q][data-tier=%q][data-member=%q]`, action, tier, member))
	}

	run(t, chromedp.Navigate(base+"/admin/ui/"), chromedp.WaitVisible(chromedp.CSS("#signin")))

	step("the browser got the strict CSP and enforces it", func(t *testing.T) {
		eventsMu.Lock()
		got := maps.Clone(docHeaders)
		eventsMu.Unlock()
		assert.Equal(t, statuspage.ContentSecurityPolicy, got["content-security-policy"])
		assert.NotContains(t, got["content-security-policy"], "unsafe-")
		assert.Contains(t, got["content-security-policy"], "frame-ancestors 'none'")
		assert.Equal(t, "nosniff", got["x-content-type-options"])
		assert.Equal(t, "no-referrer", got["referrer-policy"])

		// An inline script planted in the page does not run, and the browser reports the policy
		// for exactly that script: the header is enforced, not only sent.
		run(t, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`window.__cspViolations = 0;
			document.addEventListener("securitypolicyviolation", () => { window.__cspViolations++; });
			const s = document.createElement("script"); s.textContent = %q; document.body.appendChild(s);`, plantedScript)),
			chromedp.Poll[chromedp.Void]("window.__cspViolations > 0"))
		assert.Equal(t, "undefined", eval(t, "String(window.__inlineRan)"), "the inline script was blocked")
		bctx, cancel := bounded()
		defer cancel()
		select {
		case report := <-planted:
			assert.Contains(t, report, "script-src 'self'")
		case <-bctx.Done():
			t.Fatal("the browser never reported the blocked script")
		}
	})

	step("a wrong token shows the error and is not kept", func(t *testing.T) {
		run(t, chromedp.SendKeys(chromedp.CSS("#token"), "not-the-admin-token"), chromedp.Click(chromedp.CSS("#signin-button")),
			chromedp.WaitVisible(chromedp.CSS("#signin-error")))
		assert.Contains(t, text(t, "#signin-error"), "Wrong admin token")
		assert.Equal(t, "null", stored(t))
		assert.Equal(t, "true", eval(t, `String(document.getElementById("status").hidden)`))
	})

	step("sign in", func(t *testing.T) {
		pr.loadOn.Store(true)
		run(t, chromedp.Evaluate[chromedp.Void](`document.getElementById("token").value = ""`), chromedp.SendKeys(chromedp.CSS("#token"), adminToken),
			chromedp.Click(chromedp.CSS("#signin-button")), chromedp.WaitVisible(chromedp.CSS("#status")),
			chromedp.Poll[chromedp.Void]("window.anvilStatus.rendered() >= 3"))
		assert.Equal(t, adminToken, stored(t), "kept in sessionStorage")
		assert.Empty(t, eval(t, "document.cookie"), "never a cookie")
		assert.Equal(t, "", eval(t, `document.getElementById("token").value`))
		assert.NotContains(t, eval(t, "location.href"), adminToken, "never the URL")
	})

	step("tiers and members as the capacity JSON has them", func(t *testing.T) {
		pauseLoad()
		// One slow stream held on the capacity tier and one on the round-robin tier: nonzero counts
		// that stay put while the page and the test read them.
		var holds []*member
		for _, m := range append(append([]*member{}, pool...), rr...) {
			slow(t, m, 1000)
		}
		held := func(alias string, ms []*member) {
			resp := startStream(t, base, alias)
			t.Cleanup(func() { _ = resp.Body.Close() })
			select {
			case <-ms[0].entered:
				holds = append(holds, ms[0])
			case <-ms[1].entered:
				holds = append(holds, ms[1])
			case <-t.Context().Done():
				t.Fatal("the held request never reached a member")
			}
		}
		for _, m := range append(append([]*member{}, pool...), rr...) {
			for len(m.entered) > 0 {
				<-m.entered
			}
		}
		held("chat", pool)
		held("spread", rr)
		require.Len(t, holds, 2)
		settle(t)
		want := pr.capacityDoc(t)
		got := shown(t)
		require.Len(t, got, len(want.Tiers))
		for i, wt := range want.Tiers {
			g := got[i]
			assert.Equal(t, wt.ID, g.ID)
			assert.Contains(t, g.Meta, wt.Kind)
			assert.Equal(t, []string{stateText(wt.State, wt.Draining)}, g.State, wt.ID)
			assert.Equal(t, ceilingText(wt.Active, wt.Ceiling), g.Active, wt.ID)
			require.Len(t, g.Members, len(wt.Members), wt.ID)
			for j, wm := range wt.Members {
				gm := g.Members[j]
				assert.Equal(t, wm.ID, gm.ID)
				assert.Equal(t, []string{stateText(wm.State, wm.Draining)}, gm.State, wm.ID)
				assert.Equal(t, ceilingText(wm.Active, wm.Ceiling), gm.Active, wt.ID+"/"+wm.ID)
				if wt.Strategy == "capacity" {
					require.NotNil(t, wm.Telemetry)
					assert.True(t, strings.HasPrefix(gm.Telemetry, wm.Telemetry.Freshness), "%q shows %q", gm.Telemetry, wm.Telemetry.Freshness)
					assert.Contains(t, gm.Telemetry, " old", "the sample's age")
				} else {
					assert.Contains(t, gm.Telemetry, "not scraped")
				}
				assert.NotEqual(t, "…", gm.Routed, "a rate once two reads exist")
			}
			for _, rate := range g.Rates {
				assert.NotEqual(t, "…", rate, wt.ID)
			}
		}
		ids := []string{}
		for _, g := range got {
			ids = append(ids, g.ID)
		}
		assert.Equal(t, []string{"hosted", "replicas", "rr"}, ids)
		var active int64
		for _, wt := range want.Tiers {
			active += wt.Active
		}
		assert.EqualValues(t, 2, active, "the two held requests, nothing else")

		for _, m := range append(append([]*member{}, pool...), rr...) {
			slow(t, m, 1)
		}
	})

	step("quiesce a member through the button", func(t *testing.T) {
		pr.loadOn.Store(true)
		settle(t)
		run(t, chromedp.Click(button("quiesce", "replicas", "m01")), chromedp.WaitVisible(chromedp.CSS("#confirm")))
		preview := text(t, "#confirm")
		assert.Contains(t, preview, "Quiesce member m01 of tier replicas?")
		assert.Contains(t, preview, "Dry run answered: would_change.")
		assert.Contains(t, preview, "quiesced (reason status-page)")
		assert.Equal(t, "admitting", memberState(t, pr, "replicas", "m01"), "the dry run changed nothing")

		run(t, chromedp.Click(chromedp.CSS("#confirm-yes")), chromedp.WaitNotVisible(chromedp.CSS("#confirm")),
			chromedp.Poll[chromedp.Void](`document.getElementById("result-text").textContent.includes("changed")`))
		assert.Contains(t, text(t, "#result-text"), "quiesce member m01 of tier replicas: changed. Now quiesced (reason status-page)")
		assert.Equal(t, "quiesced", memberState(t, pr, "replicas", "m01"))
		run(t, chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.querySelector(%q).textContent.includes("quiesced")`,
			memberRow("replicas", "m01")+` td[data-field="state"]`)))

		// Its traffic stops: every request of the capacity tier goes to m00 now, and the page's
		// newest decisions say so.
		pauseLoad()
		before0, before1 := pool[0].calls.Load(), pool[1].calls.Load()
		for range 6 {
			code, err := pr.chat(t.Context(), "chat")
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, code)
		}
		assert.Equal(t, before1, pool[1].calls.Load(), "the quiesced member gets nothing")
		assert.Equal(t, before0+6, pool[0].calls.Load())
		settle(t)
		var newest []string
		require.NoError(t, json.Unmarshal([]byte(eval(t, `JSON.stringify([...document.querySelectorAll("#decisions tbody tr")].slice(0, 6).map(r => [...r.cells].map(c => c.textContent).join("|")))`)), &newest))
		require.Len(t, newest, 6)
		for _, row := range newest {
			assert.Contains(t, row, "|chat|replicas|m00|success · 200|capacity scheduler|fresh", "newest first: %s", row)
		}
	})

	step("drain the quiesced member, cancel a readmit", func(t *testing.T) {
		run(t, chromedp.Click(button("drain", "replicas", "m01")), chromedp.WaitVisible(chromedp.CSS("#confirm")))
		preview := text(t, "#confirm-preview")
		assert.Equal(t, "Dry run answered: drained.", preview, "nothing in flight on the quiesced member")
		run(t, chromedp.Click(chromedp.CSS("#confirm-yes")),
			chromedp.Poll[chromedp.Void](`document.getElementById("result-text").textContent.startsWith("drain member m01 of tier replicas: drained")`))

		run(t, chromedp.Click(button("readmit", "replicas", "m01")), chromedp.WaitVisible(chromedp.CSS("#confirm")),
			chromedp.Click(chromedp.CSS("#confirm-no")),
			chromedp.Poll[chromedp.Void](`document.getElementById("result-text").textContent.includes("cancelled after the dry run")`))
		assert.Equal(t, "quiesced", memberState(t, pr, "replicas", "m01"), "a cancelled transition changes nothing")
	})

	step("a refused transition shows its error", func(t *testing.T) {
		run(t, chromedp.Click(button("drain", "replicas", "m00")),
			chromedp.Poll[chromedp.Void](`document.getElementById("result-text").textContent.includes("not_quiesced")`))
		assert.Equal(t, "false", eval(t, `String(document.getElementById("confirm").open)`), "no dialog for a refused dry run")
	})

	step("readmit through the button", func(t *testing.T) {
		pr.loadOn.Store(true)
		run(t, chromedp.Click(button("readmit", "replicas", "m01")), chromedp.WaitVisible(chromedp.CSS("#confirm")))
		preview := text(t, "#confirm-preview")
		assert.Equal(t, "Dry run answered: would_change.", preview)
		run(t, chromedp.Click(chromedp.CSS("#confirm-yes")),
			chromedp.Poll[chromedp.Void](`document.getElementById("result-text").textContent.includes("readmit member m01 of tier replicas: changed")`))
		assert.Equal(t, "admitting", memberState(t, pr, "replicas", "m01"))
		run(t, chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.querySelector(%q).textContent.includes("admitting")`,
			memberRow("replicas", "m01")+` td[data-field="state"]`)))
	})

	step("the config panel, and a refused reload's banner until a reload succeeds", func(t *testing.T) {
		yaml := mixedYAML(direct, rr, pool)
		banner := `document.getElementById("reload-refused")`
		settle(t)
		assert.Equal(t, pr.path, text(t, "#config-source"))
		assert.Equal(t, digestOf(t, pr.path)[:12]+"…", text(t, "#config-digest"))
		assert.Equal(t, digestOf(t, pr.path), eval(t, `document.getElementById("config-digest").title`))
		assert.Equal(t, "1", text(t, "#config-generation"))
		assert.Equal(t, "none since start", text(t, "#config-last"))
		assert.Equal(t, "true", eval(t, "String("+banner+".hidden)"))

		require.Equal(t, http.StatusUnprocessableEntity, pr.reload(t, yaml+"bogus_key: 1\n"))
		run(t, chromedp.Poll[chromedp.Void](`!`+banner+`.hidden && `+banner+`.textContent.includes("bogus_key")`))
		assert.Contains(t, text(t, "#reload-refused"), "was refused: config: bogus_key: unknown key")
		assert.Contains(t, text(t, "#reload-refused"), "The running configuration (generation 1) keeps serving.")
		assert.Contains(t, text(t, "#config-last"), "refused")

		require.Equal(t, http.StatusUnprocessableEntity, pr.reload(t, "log:\n  level: debug\n"+yaml))
		run(t, chromedp.Poll[chromedp.Void](banner+`.textContent.includes("log.level: restart required")`))
		assert.NotContains(t, text(t, "#reload-refused"), "bogus_key", "the newer refusal replaced the older")
		assert.Equal(t, "1", text(t, "#config-generation"))

		require.Equal(t, http.StatusOK, pr.reload(t, strings.Replace(yaml, "shutdown_grace: 5s", "shutdown_grace: 6s", 1)))
		run(t, chromedp.Poll[chromedp.Void](banner+`.hidden`))
		assert.Equal(t, "2", text(t, "#config-generation"))
		assert.Contains(t, text(t, "#config-last"), "applied")
		assert.Equal(t, "shutdown_grace: 5s -> 6s", text(t, "#config-changes"))
		assert.Equal(t, digestOf(t, pr.path)[:12]+"…", text(t, "#config-digest"))
	})

	step("the page's arithmetic", func(t *testing.T) {
		tests := []struct{ expr, want string }{
			// Prometheus' histogram_quantile: interpolation inside the bucket, the highest finite bound
			// for a rank in +Inf, nothing without observations.
			{`anvilStatus.histogramQuantile(0.5, [{le: 1, count: 0}, {le: 3, count: 10}, {le: Infinity, count: 10}])`, "2"},
			{`anvilStatus.histogramQuantile(0.25, [{le: 1, count: 4}, {le: 3, count: 10}, {le: Infinity, count: 12}])`, "0.75"},
			{`anvilStatus.histogramQuantile(0.99, [{le: 0.1, count: 1}, {le: 0.5, count: 2}, {le: Infinity, count: 10}])`, "0.5"},
			{`anvilStatus.histogramQuantile(0.5, [{le: 0.1, count: 0}, {le: Infinity, count: 0}])`, "null"},
			// The text format: escaped label values, +Inf, comments skipped, a broken line dropped.
			{`JSON.stringify(anvilStatus.parseMetrics('# HELP x y\nm{a="q\\"u\\\\o\\nte",le="+Inf"} 3\nbroken{a="x} 1\nn 2.5e+06\n'))`,
				`[{"name":"m","labels":{"a":"q\"u\\o\nte","le":"+Inf"},"value":3},{"name":"n","labels":{},"value":2500000}]`},
			// Rates: the increase over the window, a counter reset counted from zero, refusals summed
			// over reasons, routed per member.
			{`(() => {
				const m = (t, text) => anvilStatus.snapshotOf(anvilStatus.parseMetrics(text), t);
				const older = m(0, 'anvil_router_requests_total{alias="a",member="x",outcome="success",status_class="2xx",tier="t"} 10\n' +
					'anvil_router_requests_total{alias="a",member="",outcome="not_admitted",status_class="5xx",tier="t"} 1\n' +
					'anvil_router_admission_refusals_total{reason="quiesced",tier="t"} 1\n' +
					'anvil_router_upstream_attempts_total{member="x",tier="t"} 10\n');
				const newer = m(30000, 'anvil_router_requests_total{alias="a",member="x",outcome="success",status_class="2xx",tier="t"} 19\n' +
					'anvil_router_requests_total{alias="a",member="",outcome="not_admitted",status_class="5xx",tier="t"} 0\n' +
					'anvil_router_admission_refusals_total{reason="quiesced",tier="t"} 2\n' +
					'anvil_router_admission_refusals_total{reason="exhausted",tier="t"} 3\n' +
					'anvil_router_upstream_attempts_total{member="x",tier="t"} 19\n');
				const r = anvilStatus.rates(newer, older, ["t"], ["t\u0000x"]);
				const t = r.tiers.get("t");
				return [r.seconds, t.requests, t.success, t.refusals, r.members.get("t\u0000x")].join(",");
			})()`, "30,9,9,4,9"},
			{`anvilStatus.decidedBy({outcome: "refused"}) + "|" + anvilStatus.decidedBy({outcome: "not_admitted", tier: "t"}) + "|" +
				anvilStatus.decidedBy({outcome: "success", route: "direct", tier: "t"}) + "|" +
				anvilStatus.decidedBy({outcome: "success", route: "replica", strategy: "round_robin", tier: "t"})`,
				"request gate|admission|direct|round robin"},
		}
		for _, tt := range tests {
			assert.Equal(t, tt.want, eval(t, "String("+tt.expr+")"), tt.expr)
		}
	})

	step("router text is inserted as text", func(t *testing.T) {
		run(t, chromedp.Evaluate[chromedp.Void]("window.anvilStatus.pause()"),
			chromedp.Poll[chromedp.Void]("window.anvilStatus.idle()"))
		const evil = `<img src=x onerror="window.__injected=1"><script>window.__injected=2</script>`
		doc := map[string]any{"tiers": []any{map[string]any{
			"id": evil, "kind": "replica", "strategy": "capacity", "state": "quiesced", "reason": evil, "draining": false,
			"active_requests": 0, "max_concurrency": 4,
			"members": []any{map[string]any{"id": evil, "state": "admitting", "draining": false, "active_requests": 0, "max_concurrency": 4,
				"passive_health": map[string]any{"state": "ejected"},
				"telemetry":      map[string]any{"freshness": evil, "pressure_ppm": nil}}},
		}}}
		records := []any{map[string]any{"start": evil, "alias": evil, "tier": evil, "member": evil, "outcome": evil, "status": 200}}
		docJSON, err := json.Marshal(doc)
		require.NoError(t, err)
		recJSON, err := json.Marshal(records)
		require.NoError(t, err)
		run(t, chromedp.Evaluate[chromedp.Void](fmt.Sprintf("window.anvilStatus.render(%s, null, null, %s)", docJSON, recJSON)))
		status, err := json.Marshal(map[string]any{"digest": evil, "source": evil, "generation": 3, "loaded_at": evil,
			"last_reload": map[string]any{"time": evil, "result": "refused", "changes": []string{evil}, "error": evil}})
		require.NoError(t, err)
		run(t, chromedp.Evaluate[chromedp.Void](fmt.Sprintf("window.anvilStatus.renderConfig(%s)", status)))
		assert.Equal(t, "0", eval(t, `String(document.querySelectorAll("#config img, #config script, #reload-refused img, #reload-refused script").length)`),
			"no element was made from the config status either")
		assert.Equal(t, evil, text(t, "#config-source"))
		assert.Equal(t, evil, text(t, "#config-changes"))
		assert.Contains(t, text(t, "#reload-refused"), evil)
		assert.Equal(t, "0", eval(t, `String(document.querySelectorAll("#tiers img, #tiers script, #decisions img, #decisions script").length)`),
			"no element was made from router text")
		assert.Equal(t, "undefined", eval(t, "String(window.__injected)"))
		card := fmt.Sprintf(`[...document.querySelectorAll("#tiers section.tier")].find(c => c.dataset.tier === %q)`, evil)
		assert.Equal(t, evil, eval(t, card+`.querySelector("h2 .id").textContent`), "the tier ID, literally")
		assert.Equal(t, evil, eval(t, card+`.querySelector('td[data-field="id"]').textContent`), "the member ID, literally")
		assert.Contains(t, eval(t, card+`.querySelector('dd[data-field="state"]').textContent`), "reason: "+evil)
		assert.Contains(t, eval(t, card+`.querySelector('td[data-field="state"]').textContent`), "ejected by passive health")
		assert.Equal(t, evil, eval(t, card+`.querySelector('td[data-field="telemetry"]').textContent`))
		assert.Contains(t, eval(t, `document.querySelector("#decisions tbody tr").textContent`), evil+evil)
		run(t, chromedp.Evaluate[chromedp.Void]("window.anvilStatus.resume()"), chromedp.Poll[chromedp.Void](
			fmt.Sprintf(`!%s`, card)))
	})

	step("refreshing pauses while the tab is hidden", func(t *testing.T) {
		run(t, chromedp.Evaluate[chromedp.Void](`Object.defineProperty(document, "hidden", {configurable: true, get: () => true});
			document.dispatchEvent(new Event("visibilitychange"))`),
			chromedp.Poll[chromedp.Void]("window.anvilStatus.idle()"))
		n := rendered(t)
		assert.Equal(t, "true", eval(t, "String(window.anvilStatus.idle())"), "hidden: nothing scheduled")
		run(t, chromedp.Evaluate[chromedp.Void](`Object.defineProperty(document, "hidden", {configurable: true, get: () => false});
			document.dispatchEvent(new Event("visibilitychange"))`),
			chromedp.Poll[chromedp.Void](fmt.Sprintf("window.anvilStatus.rendered() > %d", n)))
	})

	step("screenshots", func(t *testing.T) {
		pr.loadOn.Store(true)
		// A request held busy, so the bars show something.
		slow(t, pool[0], 1000)
		slow(t, pool[1], 1000)
		resp := startStream(t, base, "chat")
		defer func() { slow(t, pool[0], 1); slow(t, pool[1], 1); _ = resp.Body.Close() }()
		settle(t)
		require.NoError(t, os.MkdirAll(screenshotDir, 0o755))
		bctx, cancel := bounded()
		defer cancel()
		wide, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(screenshotDir, "status-page.png"), wide, 0o644))

		run(t, chromedp.EmulateViewport(390, 844))
		settle(t)
		assert.Equal(t, "flex", eval(t, `getComputedStyle(document.querySelector("#tiers td[data-field=routed]")).display`),
			"one column: table cells become labelled rows")
		narrow, err := chromedp.Run(bctx, chromedp.CaptureScreenshot()) // the first screen: the rest is more of the same
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(screenshotDir, "status-page-narrow.png"), narrow, 0o644))
		run(t, chromedp.EmulateViewport(1280, 900))
		assert.Equal(t, "table-cell", eval(t, `getComputedStyle(document.querySelector("#tiers td[data-field=routed]")).display`))
	})

	step("sign out forgets the token", func(t *testing.T) {
		pauseLoad()
		run(t, chromedp.Click(chromedp.CSS("#signout")), chromedp.WaitVisible(chromedp.CSS("#signin")))
		assert.Equal(t, "null", stored(t))
		assert.Equal(t, "0", eval(t, `String(document.querySelectorAll("#tiers > *, #decisions tbody > *").length)`), "nothing of the router stays on the page")
		assert.Equal(t, "true", eval(t, "String(window.anvilStatus.idle())"))
		run(t, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#signin")))
		assert.Equal(t, "true", eval(t, `String(document.getElementById("status").hidden)`), "a reload asks again")
	})

	step("an observer token reads, and the router refuses its transitions", func(t *testing.T) {
		run(t, chromedp.SendKeys(chromedp.CSS("#token"), observerToken), chromedp.Click(chromedp.CSS("#signin-button")),
			chromedp.WaitVisible(chromedp.CSS("#status")))
		settle(t)
		assert.NotEmpty(t, shown(t), "the read-only page shows the tiers")
		assert.Equal(t, "admin only", text(t, "#config-source"), "the normalized config is the admin's")
		assert.Empty(t, eval(t, `document.getElementById("error").textContent`), "its 403 is no read error")
		run(t, chromedp.Click(button("quiesce", "replicas", "m01")),
			chromedp.Poll[chromedp.Void](`document.getElementById("result-text").textContent.includes("insufficient_role")`))
		assert.Equal(t, "false", eval(t, `String(document.getElementById("confirm").open)`), "refused at the dry run")
		assert.Equal(t, "admitting", memberState(t, pr, "replicas", "m01"), "an observer quiesces nothing")
		run(t, chromedp.Click(chromedp.CSS("#signout")), chromedp.WaitVisible(chromedp.CSS("#signin")))
	})

	step("only the router, only with the header", func(t *testing.T) {
		eventsMu.Lock()
		got := append([]string(nil), urls...)
		eventsMu.Unlock()
		require.NotEmpty(t, got)
		for _, u := range got {
			assert.True(t, strings.HasPrefix(u, base+"/"), "a request outside the router: %s", u)
		}
		for _, req := range pr.requests() {
			assert.False(t, req.cookie, "no cookie: %s", req.path)
			assert.NotContains(t, req.query, adminToken, "the token never rides in a URL")
			if strings.HasPrefix(req.path, "/admin/v1/") || req.path == "/metrics" {
				assert.NotEmpty(t, req.token, "every JSON call carries the bearer header: %s", req.path)
			}
			if strings.HasPrefix(req.path, "/admin/ui") {
				assert.Empty(t, req.token, "the page's files are fetched without the token")
			}
		}
	})
}

// memberState reads one member's admission state from the capacity JSON.
func memberState(t *testing.T, pr *pageRouter, tier, member string) string {
	t.Helper()
	for _, tt := range pr.capacityDoc(t).Tiers {
		for _, m := range tt.Members {
			if tt.ID == tier && m.ID == member {
				return m.State
			}
		}
	}
	t.Fatalf("no member %s/%s", tier, member)
	return ""
}

// startStream starts a streaming request for alias; the caller closes its body.
func startStream(t *testing.T, base, alias string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/v1/chat/completions", strings.NewReader(bodyFor(alias, 256, true)))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+callerToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil && !errors.Is(err, context.Canceled) {
		require.NoError(t, err)
	}
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return resp
}

// TestBrowserTestFailsUnderCIWithoutABrowser: without a browser on PATH the browser test fails
// under CI (a CI image without Chromium is broken, not green) and skips elsewhere.
func TestBrowserTestFailsUnderCIWithoutABrowser(t *testing.T) {
	machinetool.MissingFailsUnderCI(t, "TestStatusPageInABrowser", chromium)
}
