/**
 * The runs pages over the in-memory Claude and the in-memory git, under TestClock: `/runs` lists the async runs
 * and verifies, running and finished, newest first, filtered by state and kind with links that keep each other (a
 * value it does not know is a 400, escaped), each linking to `/runs/<name>`; that page says what the run was and
 * how it ended (reply, failure, still running, or a sync run's agent record), then its diff or why it has none.
 */
import { assert, describe, it } from "@effect/vitest"
import { Flotta } from "@flotta/core/Flotta"
import * as Testing from "@flotta/core/Testing"
import { Effect, TestClock } from "effect"
import type { PageRequest } from "../src/Pages.js"
import { render } from "../src/Pages.js"

const HOSTILE = `<script>alert("x")</script> & <b>bold</b>`
const ESCAPED = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;"

const fleet = Testing.layer({
  model: ({ prompt }) =>
    prompt === "hang"
      ? Testing.hang()
      : prompt === "fail"
      ? Testing.apiError(500)
      : prompt === "hostile"
      ? HOSTILE
      : `echo: ${prompt}`,
  git: Testing.git({
    changes: ({ name }) => (name === "fixer" ? [{ path: "notes.html", after: `${HOSTILE}\n` }] : [])
  })
})

const page = (p: PageRequest["page"], options: Partial<PageRequest> = {}) =>
  render({ page: p, fragment: false, query: new URLSearchParams(), ...options })

const runs = (search: string) => page("runs", { query: new URLSearchParams(search), fragment: true })

/** The names in the Runs table, top to bottom. */
const namesOf = (markup: string) =>
  [...markup.matchAll(/<tr>\n<td><a href="\/runs\/([^"]+)">/g)].map((m) => decodeURIComponent(m[1]!))

/** One run started a minute after the last: first (ok), broken (fails), checks (a verify), slow (still running). */
const started = Effect.gen(function*() {
  const fleet = yield* Flotta
  yield* fleet.awaitRun(yield* fleet.runAsync({ name: "first", prompt: "go" }))
  yield* TestClock.adjust("1 minute")
  yield* Effect.either(fleet.awaitRun(yield* fleet.runAsync({ name: "broken", prompt: "fail" })))
  yield* TestClock.adjust("1 minute")
  yield* fleet.awaitRun(yield* fleet.verifyAsync("/repo", { name: "checks", branch: "main", checks: ["npm test"] }))
  yield* TestClock.adjust("1 minute")
  yield* fleet.runAsync({ name: "slow", prompt: "hang" })
  yield* TestClock.adjust("1 minute")
  return fleet
})

describe("/runs", () => {
  it.effect("lists running and finished runs and verifies, newest first, each linking to its page", () =>
    Effect.gen(function*() {
      yield* started
      const { html, status } = yield* page("runs")
      assert.strictEqual(status, 200)
      assert.include(html, `<a href="/runs" aria-current="page">Runs</a>`)
      assert.include(html, `data-page="runs"`)
      assert.include(html, `<table aria-label="Runs">`)
      assert.deepStrictEqual(namesOf(html), ["slow", "checks", "broken", "first"])
      assert.include(html, "4 shown · 1 running · 2 succeeded · 1 failed")
      const row = (name: string) => new RegExp(`<tr>\\n<td><a href="/runs/${name}">[^]*?</tr>`).exec(html)![0]
      assert.include(row("slow"), `pill-running">running</span>`)
      assert.include(row("slow"), `data-since="1970-01-01T00:03:00.000Z"`)
      assert.include(row("checks"), `<span class="tag">verify</span>`)
      assert.include(row("checks"), "checks passed")
      assert.include(row("broken"), `pill-failed">failed</span>`)
      assert.include(row("broken"), `<span class="error">TurnFailed</span>`)
      assert.include(row("first"), `pill-succeeded">succeeded</span>`)
      assert.include(row("first"), "$0.0010")
      assert.include(row("first"), `<time datetime="1970-01-01T00:00:00.000Z" data-at>`)
      // The filters, kept above the live region: a fragment has the table alone.
      assert.include(html, `<nav class="kinds" aria-label="State">`)
      assert.include(html, `<a href="/runs" aria-current="true">All</a>`)
      const fragment = yield* runs("")
      assert.notInclude(fragment.html, `aria-label="State"`)
      assert.include(fragment.html, `<table aria-label="Runs">`)
    }).pipe(Effect.provide(fleet)))

  it.effect("filters by state and kind, each link keeping the other; a value it does not know is a 400", () =>
    Effect.gen(function*() {
      yield* started
      assert.deepStrictEqual(namesOf((yield* runs("state=failed")).html), ["broken"])
      assert.deepStrictEqual(namesOf((yield* runs("state=running")).html), ["slow"])
      assert.deepStrictEqual(namesOf((yield* runs("kind=verify")).html), ["checks"])
      assert.deepStrictEqual(namesOf((yield* runs("state=succeeded&kind=run")).html), ["first"])
      assert.deepStrictEqual(namesOf((yield* runs("state=all&kind=all")).html), ["slow", "checks", "broken", "first"])
      assert.include((yield* runs("state=failed&kind=verify")).html, "No runs match.")

      const verifies = (yield* page("runs", { query: new URLSearchParams("kind=verify") })).html
      assert.include(verifies, `<a href="/runs?kind=verify" aria-current="true">Verifies</a>`)
      assert.include(verifies, `<a href="/runs?state=failed&amp;kind=verify">Failed</a>`)
      assert.include(verifies, `<a href="/runs?kind=verify" aria-current="true">All</a>`)
      assert.include(verifies, `<a href="/runs">All</a>`)

      const bad = yield* page("runs", { query: new URLSearchParams("state=<b>done</b>") })
      assert.strictEqual(bad.status, 400)
      assert.include(
        bad.html,
        `No state is called &quot;&lt;b&gt;done&lt;/b&gt;&quot;: use one of all, running, succeeded, failed.`
      )
      assert.notInclude(bad.html, "<b>done</b>")
      assert.strictEqual((yield* runs("kind=job")).status, 400)
    }).pipe(Effect.provide(fleet)))

  it.effect("says how to start one when there are none", () =>
    Effect.map(runs(""), ({ html }) => assert.include(html, "No runs yet: a run started over MCP (flotta_run)")).pipe(
      Effect.provide(fleet)
    ))
})

describe("/runs/NAME", () => {
  it.effect("a worktree run: its facts and reply (escaped), then the files it changed and the patch", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      yield* fleet.awaitRun(yield* fleet.runAsync({ name: "fixer", prompt: "hostile", cwd: "/repo", worktree: true }))
      const { html, status } = yield* page("run", { name: "fixer" })
      assert.strictEqual(status, 200)
      assert.include(html, `<a href="/runs" aria-current="page">Runs</a>`)
      assert.include(html, `<h1>fixer <span class="pill pill-succeeded">succeeded</span></h1>`)
      assert.include(html, `<dl class="facts-grid" aria-label="Run">`)
      assert.include(html, "<div><dt>Branch</dt><dd><code>worktree-fixer</code></dd></div>")
      assert.include(html, `<section class="outcome" aria-label="Outcome">`)
      assert.include(html, `<span class="label">Reply</span><p class="text">${ESCAPED}</p>`)
      assert.include(html, `<table aria-label="Files">`)
      assert.include(html, `<td class="path">notes.html</td>`)
      assert.include(html, `<section aria-label="Patch">`)
      assert.include(html, `<span class="line line-add">+${ESCAPED}</span>`)
      assert.notInclude(html, "<script>alert")
      assert.include(html, `<a href="/agents/fixer">Its agent and transcript</a>`)
    }).pipe(Effect.provide(fleet)))

  it.effect("a run without a diff still says what it was and how it ended: a reply, a failure, still running", () =>
    Effect.gen(function*() {
      yield* started
      const first = (yield* page("run", { name: "first", fragment: true })).html
      assert.include(first, `<span class="label">Reply</span><p class="text">echo: go</p>`)
      assert.include(first, "<div><dt>Cost</dt><dd>$0.0010</dd></div>")
      assert.include(first, `<h2 id="diff-heading">Diff</h2>\n<p class="notice">No diff: `)
      assert.notInclude(first, `aria-label="Files"`)

      const broken = (yield* page("run", { name: "broken", fragment: true })).html
      assert.include(broken, `<h1>broken <span class="pill pill-failed">failed</span></h1>`)
      assert.match(broken, /<p class="error"><strong>TurnFailed<\/strong>: [^<]*500/)

      const checks = (yield* page("run", { name: "checks", fragment: true })).html
      assert.include(checks, `<span class="tag">verify</span>`)
      assert.include(checks, "<li><code>npm test</code>: ok</li>")
      assert.notInclude(checks, "Its agent and transcript", "a verify has no agent")

      const slow = yield* page("run", { name: "slow" })
      assert.strictEqual(slow.status, 200)
      assert.include(slow.html, `pill-running">running</span>`)
      assert.include(slow.html, `<p class="muted">Still running.</p>`)
      assert.include(slow.html, `data-page="run" data-agent="slow"`)
    }).pipe(Effect.provide(fleet)))

  it.effect("a run the caller waited for is read from its agent's record; a name nothing knows is a 404", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      yield* fleet.run({ name: "quick", prompt: "hostile" })
      const quick = yield* page("run", { name: "quick", fragment: true })
      assert.strictEqual(quick.status, 200)
      assert.include(quick.html, `<h1>quick <span class="pill pill-succeeded">succeeded</span></h1>`)
      assert.match(quick.html, /<section class="outcome" aria-label="Outcome">\n<p><span class="pill pill-succeeded">/)
      assert.include(quick.html, `<span class="label">Reply</span><p class="text">${ESCAPED}</p>`)
      assert.include(quick.html, "<div><dt>Cost</dt><dd>$0.0010</dd></div>")
      assert.notInclude(quick.html, "<script>alert")

      const unknown = yield* page("run", { name: "nothing" })
      assert.strictEqual(unknown.status, 404)
      assert.include(unknown.html, `No run is named nothing. <a href="/runs">See the runs.</a>`)
    }).pipe(Effect.provide(fleet)))
})
