/**
 * The pages over the in-memory Claude (no process), under TestClock: the fixed accessible names, the shell the
 * client script reads (`data-cursor`, `data-page`, `#flash`, `main#live`), fragments, escaping of what agents
 * say, 404s for agents that are not there, the scheduler's page on and off, and the assets.
 */
import { assert, describe, it } from "@effect/vitest"
import { Flotta } from "@flotta/core/Flotta"
import * as Testing from "@flotta/core/Testing"
import { Scheduler } from "@flotta/scheduler/Scheduler"
import * as SchedulerConfig from "@flotta/scheduler/SchedulerConfig"
import { Effect, Either, Layer, Option, TestClock } from "effect"
import { eventually, withAgents } from "../../core/test/support.js"
import { asset } from "../src/Assets.js"
import { html } from "../src/Html.js"
import type { PageRequest } from "../src/Pages.js"
import { render } from "../src/Pages.js"

const HOSTILE = `<script>alert("x")</script> & <b>bold</b>`

/** `hostile` answers with markup; `write <file>` asks to Write; anything else is echoed. */
const model: Testing.Model = ({ prompt }) => {
  if (prompt === "hostile") return HOSTILE
  const [word, file = "out.txt"] = prompt.split(" ")
  if (word === "write") return Testing.toolUse("Write", { file_path: file, content: "<hi>" })
  return `echo: ${prompt}`
}

const fleet = Testing.layer({ model })

const page = (p: PageRequest["page"], options: Partial<PageRequest> = {}) =>
  render({ page: p, fragment: false, query: new URLSearchParams(), ...options })

const NAV = ["Agents", "Runs", "Approvals", "Schedule", "Reports", "Costs"]

describe("pages", () => {
  it.effect("agents: the shell, the Agents table with a row per agent, charts, and a fragment without the shell", () =>
    Effect.gen(function*() {
      const fleet = yield* withAgents(["alpha", "beta"])
      yield* fleet.ask("alpha", "hello")
      const { html, status } = yield* page("agents")
      assert.strictEqual(status, 200)
      assert.match(html, /^<!doctype html>/)
      for (const label of NAV) assert.include(html, `>${label}</a>`)
      const cursor = (yield* fleet.reports({ last: 1 })).next
      assert.isAbove(cursor, 0)
      assert.include(html, `<body data-cursor="${cursor}" data-page="agents">`)
      assert.include(html, `<div id="flash" role="alert"></div>`)
      assert.include(html, `<main id="live">`)
      assert.include(html, `<table aria-label="Agents">`)
      assert.include(html, `<a href="/agents/alpha">alpha</a>`)
      assert.include(html, `<a href="/agents/beta">beta</a>`)
      assert.include(html, `pill-idle">idle</span>`)
      assert.include(html, "$0.0010") // one turn at the in-memory Claude's default cost
      assert.include(html, "<figcaption>Cost per hour</figcaption>")
      assert.include(html, "<figcaption>Turn duration</figcaption>")
      assert.include(html, `src="/assets/uplot.iife.min.js"`)
      assert.include(html, `src="/assets/app.js"`)

      const fragment = yield* page("agents", { fragment: true })
      assert.notInclude(fragment.html, "<nav")
      assert.notInclude(fragment.html, "<main")
      assert.notInclude(fragment.html, "Cost per hour") // the charts live outside the region
      assert.include(fragment.html, `<table aria-label="Agents">`)
    }).pipe(Effect.provide(fleet)))

  it.effect("agents: a working agent shows its turn's start ticking, and queued turns", () =>
    Effect.gen(function*() {
      const fleet = yield* withAgents("slow")
      yield* fleet.prompt("slow", "hang")
      yield* fleet.prompt("slow", "next")
      yield* eventually(fleet.status("slow"), (s) => s.status === "working")
      const { html } = yield* page("agents", { fragment: true })
      assert.match(html, /<time datetime="[^"]+" data-since="1970-01-01T00:00:00.000Z">/)
      assert.include(html, `pill-working">working</span>`)
    }).pipe(Effect.provide(Testing.layer({ model: ({ prompt }) => (prompt === "hang" ? Testing.hang() : "ok") }))))

  it.effect("agent: status, the transcript (escaped), and the Prompt, Send, Interrupt and Close controls", () =>
    Effect.gen(function*() {
      const fleet = yield* withAgents("alpha")
      yield* fleet.ask("alpha", "hostile")
      const { html, status } = yield* page("agent", { name: "alpha" })
      assert.strictEqual(status, 200)
      assert.include(html, `data-page="agent" data-agent="alpha"`)
      assert.include(html, `<section class="transcript" aria-label="Transcript">`)
      assert.include(html, "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;")
      assert.notInclude(html, "<script>alert")
      assert.notInclude(html, "<b>bold</b>")
      assert.include(html, `<label for="prompt">Prompt</label>`)
      assert.include(html, `<textarea id="prompt" name="text"`)
      assert.include(html, `action="/agents/alpha/prompt" data-action="send"`)
      assert.include(html, `<button type="submit" form="interrupt">Interrupt</button>`)
      assert.include(
        html,
        `<form id="interrupt" method="post" action="/agents/alpha/interrupt" data-action="interrupt">`
      )
      assert.include(html, `<button type="submit" form="close" class="danger">Close</button>`)
      assert.include(html, `<form id="close" method="post" action="/agents/alpha/close" data-action="close">`)
      assert.include(html, ">Send</button>")
      assert.include(html, `<form method="post" action="/agents/alpha/fork" data-action="fork" class="fork"`)
      assert.include(html, `<input id="fork-name" name="name" required`)
      assert.include(html, `<button type="submit" form="sleep">Hibernate</button>`)
      assert.include(html, `<form id="compact" method="post" action="/agents/alpha/compact" data-action="compact">`)
      assert.include(html, `<form id="clear" method="post" action="/agents/alpha/clear" data-action="clear">`)
      assert.match(html, /<dt>Context<\/dt><dd>\d+ tokens \([\d.]+% of 200,000\)<\/dd>/)
      assert.include(html, `<form id="sleep" method="post" action="/agents/alpha/hibernate" data-action="hibernate">`)
      yield* fleet.hibernate("alpha")
      const asleep = yield* page("agent", { name: "alpha" })
      assert.include(asleep.html, `pill-hibernated">hibernated</span>`)
      assert.include(asleep.html, `<button type="submit" form="sleep">Wake</button>`)
      assert.include(asleep.html, `action="/agents/alpha/wake" data-action="wake"`)
      // The controls sit outside the live region: a refresh leaves the typing alone.
      const fragment = yield* page("agent", { name: "alpha", fragment: true })
      assert.include(fragment.html, `aria-label="Transcript"`)
      assert.notInclude(fragment.html, "textarea")
    }).pipe(Effect.provide(fleet)))

  it.effect("agent: a fork shows where it came from, in its facts and at the top of its transcript", () =>
    Effect.gen(function*() {
      const fleet = yield* withAgents("alpha")
      yield* fleet.ask("alpha", "one")
      yield* fleet.fork("alpha", "beta")
      yield* fleet.ask("beta", "two")
      const { html } = yield* page("agent", { name: "beta", fragment: true })
      assert.include(html, `<div><dt>Forked from</dt><dd><a href="/agents/alpha">alpha</a> at t1</dd></div>`)
      assert.include(
        html,
        `<p class="mark" aria-label="Forked">Forked from <a href="/agents/alpha">alpha</a> at t1</p>`
      )
    }).pipe(Effect.provide(fleet)))

  it.effect("agent: a compaction is marked in the transcript, and a session file not written is shown", () =>
    Effect.gen(function*() {
      const fleet = yield* withAgents("alpha")
      yield* fleet.ask("alpha", "one")
      const compacted = yield* fleet.wait("alpha", yield* fleet.compact("alpha"))
      yield* fleet.hibernate("alpha")
      const { html } = yield* page("agent", { name: "alpha", fragment: true })
      const { postTokens, preTokens } = compacted.compaction!
      assert.include(
        html,
        `<p class="mark" aria-label="Compacted">Compacted (manual): ${preTokens} → ${postTokens} tokens`
      )
      assert.include(
        html,
        `<div><dt>Session file</dt><dd class="error">not written (ENOSPC): part of its memory cannot be resumed</dd></div>`
      )
    }).pipe(Effect.provide(Testing.layer({ model, diskFull: () => true }))))

  it.effect("agent: a finished best-of-N run shows its attempts, the winner and each failing check", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const name = yield* fleet.runAsync({ name: "best", prompt: "try", attempts: 2, verify: { checks: ["npm test"] } })
      yield* fleet.awaitRun(name)
      const { html } = yield* page("agent", { name: "best", fragment: true })
      assert.include(html, "Attempt 2 of 2 won; all together $0.0020.")
      assert.include(html, `<table class="attempts" aria-label="Attempts">`)
      assert.include(html, `<td>1</td><td><span class="pill pill-failed">failed</span></td>`)
      assert.include(html, `<code>npm test</code> (exit 1)`)
      assert.include(html, `<code>worktree-best-a2</code>`)
    }).pipe(Effect.provide(Testing.layer({
      model,
      git: Testing.git({ check: ({ env }) => (env["FLOTTA_ATTEMPT"] === "2" ? 0 : 1) })
    }))))

  it.effect("agent: tool calls with their inputs and the permission decisions", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      yield* fleet.spawn("w", { permission: { allow: ["Read"], ask: ["Write"] } })
      const turnId = yield* fleet.prompt("w", "write notes.md")
      const [pending] = yield* eventually(fleet.approvals({ agent: "w" }), (list) => list.length > 0)
      yield* fleet.decide(pending!.id, { behavior: "deny", message: "not now", by: "dashboard" })
      yield* fleet.wait("w", turnId)
      const { html } = yield* page("agent", { name: "w", fragment: true })
      assert.include(html, `<span class="tool">Write</span>`)
      assert.include(html, "&quot;file_path&quot;: &quot;notes.md&quot;")
      assert.include(html, "&lt;hi&gt;")
      assert.match(html, /decision-deny">denied by dashboard: [^<]*not now</)
      // Its outcome beside it: refused by a human on the dashboard, the result collapsed.
      assert.match(html, /outcome-refused">refused: denied by a human \(dashboard\) · /)
      assert.match(
        html,
        /<details class="result" data-call="[^"]+"><summary>Result, \d+ B<\/summary><pre>[^<]*not now<\/pre><\/details>/
      )
    }).pipe(Effect.provide(fleet)))

  it.effect("agent: a call's result is escaped, and a long one says how much of it was kept", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      yield* fleet.spawn("b", { permission: "full" })
      yield* fleet.ask("b", "bash")
      const { html } = yield* page("agent", { name: "b", fragment: true })
      assert.match(html, /outcome-ok">ok · /)
      assert.include(html, "<summary>Result, 5.0 KiB (the first 4.0 KiB kept)</summary>")
      assert.include(html, "&lt;b&gt;")
      assert.notInclude(html, "<b>")
    }).pipe(Effect.provide(Testing.layer({
      model: () => Testing.toolUse("Bash", { command: "cat page.html" }, "read", { output: "<b>".repeat(1707) })
    }))))

  it.effect("agent: an unknown name is a 404 page; a closed agent is read from the store, marked, without controls", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const unknown = yield* page("agent", { name: "nobody" })
      assert.strictEqual(unknown.status, 404)
      assert.include(unknown.html, "No agent or run is named nobody.")
      assert.include(unknown.html, `data-page="agent" data-agent="nobody"`)
      yield* fleet.spawn("gone")
      yield* fleet.ask("gone", "hostile")
      yield* TestClock.adjust("90 seconds")
      yield* fleet.close("gone")
      const closed = yield* page("agent", { name: "gone" })
      assert.strictEqual(closed.status, 200)
      assert.include(closed.html, `<h1>gone <span class="pill pill-closed">closed</span></h1>`)
      assert.include(
        closed.html,
        `<p class="notice" aria-label="Closed">Closed <time datetime="1970-01-01T00:01:30.000Z" data-at>` +
          `1970-01-01 00:01 UTC</time> (closed by request). Read from the store: it takes no more prompts.</p>`
      )
      assert.include(closed.html, "<div><dt>Turns</dt><dd>1</dd></div>")
      assert.include(closed.html, `<section class="transcript" aria-label="Transcript">`)
      assert.include(closed.html, "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;")
      assert.notInclude(closed.html, "<script>alert")
      // Nothing that would act on it: no prompt, no buttons, no forms.
      assert.notInclude(closed.html, "<textarea")
      assert.notInclude(closed.html, "<form")
      assert.notInclude(closed.html, "Interrupt")
      assert.include(closed.html, `<a href="/reports?agent=gone">Its reports</a>`)
      // The page a closed run's agent has: its outcome, and its run page.
      yield* fleet.awaitRun(yield* fleet.runAsync({ name: "errand", prompt: "hostile" }))
      const run = yield* page("agent", { name: "errand", fragment: true })
      assert.strictEqual(run.status, 200)
      assert.include(run.html, `<section class="outcome" aria-label="Outcome">`)
      assert.include(run.html, `<a href="/runs/errand">Its run</a>`)
      assert.notInclude(run.html, "<script>alert")
    }).pipe(Effect.provide(fleet)))

  it.effect("approvals: one article per pending approval with Message, Approve and Deny; none says so", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const none = yield* page("approvals")
      assert.include(none.html, "No approvals are waiting.")
      yield* fleet.spawn("w", { permission: { allow: ["Read"], ask: ["Write"] } })
      yield* fleet.prompt("w", "write <x>.md")
      const [pending] = yield* eventually(fleet.approvals(), (list) => list.length > 0)
      const { html } = yield* page("approvals", { fragment: true })
      const id = pending!.id
      assert.include(html, `<article class="approval" aria-label="Approval ${id}">`)
      assert.include(html, `<a href="/agents/w">w</a> wants to use <span class="tool">Write</span>`)
      assert.include(html, "&quot;file_path&quot;: &quot;&lt;x&gt;.md&quot;")
      assert.include(html, `data-until="${pending!.expiresAt}"`)
      assert.include(html, `<label>Message <input type="text" name="message"`)
      assert.include(html, `action="/approvals/${id}/approve" data-action="decide"`)
      assert.include(html, ">Approve</button>")
      assert.include(html, `formaction="/approvals/${id}/deny" class="danger">Deny</button>`)
    }).pipe(Effect.provide(fleet)))

  it.effect("reports: newest first with data-seq, filtered by agent and kind (repeated or listed)", () =>
    Effect.gen(function*() {
      const fleet = yield* withAgents(["a", "b"])
      yield* fleet.ask("a", "hostile")
      yield* fleet.ask("b", "two")
      const all = yield* page("reports", { fragment: true })
      assert.include(all.html, `<table aria-label="Reports">`)
      const seqs = [...all.html.matchAll(/data-seq="(\d+)"/g)].map((m) => Number(m[1]))
      assert.isAbove(seqs.length, 4)
      assert.deepStrictEqual(seqs, [...seqs].sort((x, y) => y - x))
      assert.include(all.html, "&lt;script&gt;alert")
      assert.notInclude(all.html, "<script>alert")

      const query = new URLSearchParams([["agent", "a"], ["kind", "result"], ["kind", "spawned, closed"]])
      const filtered = yield* page("reports", { query })
      const rows = [...filtered.html.matchAll(/<tr data-seq="\d+">(.*?)<\/tr>/g)].map((m) => m[1]!)
      assert.deepStrictEqual(rows.map((r) => /class="kind">(\w+)</.exec(r)![1]), ["result", "spawned"])
      assert.isTrue(rows.every((r) => r.includes(`<a href="/agents/a">a</a>`)))
      assert.include(filtered.html, `name="agent" value="a"`)
      assert.include(filtered.html, `name="kind" value="result, spawned, closed"`)
      assert.include(filtered.html, ">Filter</button>")
    }).pipe(Effect.provide(fleet)))

  it.effect("schedule: \"The scheduler is off\" without one", () =>
    Effect.gen(function*() {
      const { html, status } = yield* page("schedule")
      assert.strictEqual(status, 200)
      assert.include(html, "The scheduler is off")
      assert.notInclude(html, ">Pause</button>")
    }).pipe(Effect.provide(fleet)))

  it.effect("schedule: window, routines with Run now, spend, findings, and the steering buttons", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.parse("2025-03-03T10:00:00Z")) // a Monday, within the hours
      const { html } = yield* page("schedule").pipe(Effect.provide(scheduled))
      assert.include(html, `data-page="schedule"`)
      assert.include(html, `pill-working">working</span>`)
      assert.include(html, "09:00–17:00")
      assert.include(html, `<table aria-label="Routines">`)
      assert.include(html, `<th scope="row">nudge</th>`)
      assert.include(html, `action="/schedule/routines/nudge/run" data-action="run"`)
      assert.include(html, ">Run now</button>")
      assert.include(html, "of $0.5000")
      assert.include(html, "No findings yet.")
      assert.match(html, /aria-label="Routines"[^]*aria-label="Triggers"[^]*No findings yet/) // the webhooks' triggers too
      assert.notInclude(html, `aria-label="Notifications"`) // no notifier
      for (const [url, label] of [["pause", "Pause"], ["resume", "Resume"], ["stop-for-today", "Stop for today"]]) {
        assert.match(html, new RegExp(`action="/schedule/${url}"[^]*?>${label}</button>`))
      }
      assert.match(html, /action="\/schedule\/keep-going"[^]*?<label>Minutes <input type="number" name="minutes"/)
      assert.include(html, ">Keep going</button>")
    }))

  it.effect("login: a 401 with the token form and no script; notFound: a 404; an error goes to #flash", () =>
    Effect.gen(function*() {
      const login = yield* page("login", { error: "That token is <not> right." })
      assert.strictEqual(login.status, 401)
      assert.include(login.html, `<form method="post" action="/login">`)
      assert.include(login.html, `name="token"`)
      assert.include(login.html, ">Sign in</button>")
      assert.include(login.html, `<div id="flash" role="alert">That token is &lt;not&gt; right.</div>`)
      assert.notInclude(login.html, "app.js")
      const missing = yield* page("notFound")
      assert.strictEqual(missing.status, 404)
      assert.include(missing.html, "Not found")
    }).pipe(Effect.provide(fleet)))
})

const scheduled = Scheduler.layer(Option.getOrThrow(Either.getOrThrow(SchedulerConfig.read({
  schedule: {
    timezone: "utc",
    hours: Object.fromEntries(["mon", "tue", "wed", "thu", "fri"].map((d) => [d, [["09:00", "17:00"]]])),
    tickMs: 24 * 3_600_000
  },
  routines: [
    {
      name: "nudge",
      action: "prompt",
      agent: "helper",
      prompt: "how are things?",
      every: { intervalMs: 3_600_000 },
      dailyBudgetUsd: 0.5
    }
  ]
})))).pipe(Layer.provideMerge(fleet))

describe("html", () => {
  it("escapes what it interpolates, except html; joins arrays; null, undefined and false are nothing", () => {
    const name = `"><img src=x onerror=alert(1)>`
    assert.strictEqual(
      html`<a title="${name}">${name}</a>`.value,
      `<a title="&quot;&gt;&lt;img src=x onerror=alert(1)&gt;">&quot;&gt;&lt;img src=x onerror=alert(1)&gt;</a>`
    )
    assert.strictEqual(
      html`<ul>${["a&b", "c"].map((x) => html`<li>${x}</li>`)}</ul>`.value,
      "<ul><li>a&amp;b</li><li>c</li></ul>"
    )
    assert.strictEqual(html`${html`<br>`}${null}${undefined}${false}${0}${"'"}`.value, "<br>0&#39;")
  })
})

describe("a fleet over several hosts", () => {
  // What a cluster's Flotta gives: every agent names the host that runs it.
  const hosted = Layer.effect(
    Flotta,
    Effect.map(Flotta, (local) =>
      Flotta.make({
        ...local,
        list: () => Effect.map(local.list(), (infos) => infos.map((info) => ({ ...info, host: "node-b" }))),
        info: (name: string) => Effect.map(local.info(name), (info) => ({ ...info, host: "node-b" }))
      }))
  ).pipe(Layer.provideMerge(fleet))

  it.effect("shows each agent's host in the table and on its page", () =>
    Effect.gen(function*() {
      yield* (yield* Flotta).spawn("alpha")
      const agents = (yield* page("agents")).html
      assert.include(agents, `<th scope="col">Host</th>`)
      assert.include(agents, `<td>node-b</td>`)
      const one = (yield* page("agent", { name: "alpha" })).html
      assert.include(one, `<div><dt>Host</dt><dd>node-b</dd></div>`)
    }).pipe(Effect.provide(hosted)))

  it.effect("has no Host column on one host", () =>
    Effect.gen(function*() {
      yield* (yield* Flotta).spawn("alpha")
      assert.notInclude((yield* page("agents")).html, `>Host</th>`)
    }).pipe(Effect.provide(fleet)))
})

describe("assets", () => {
  it.effect("the script, the stylesheet and uPlot, with their types; anything else is none", () =>
    Effect.gen(function*() {
      const text = (name: string) =>
        Effect.map(asset(name), (a) => ({
          type: Option.getOrThrow(a).type,
          body: new TextDecoder().decode(Option.getOrThrow(a).body)
        }))
      const js = yield* text("app.js")
      assert.strictEqual(js.type, "text/javascript; charset=utf-8")
      assert.include(js.body, "EventSource")
      assert.include((yield* text("app.css")).body, "prefers-color-scheme")
      assert.include((yield* text("uplot.iife.min.js")).body, "uPlot")
      assert.strictEqual((yield* text("uplot.min.css")).type, "text/css; charset=utf-8")
      assert.isTrue(Option.isNone(yield* asset("../package.json")))
      assert.isTrue(Option.isNone(yield* asset("toString")))
      // Read once: the same bytes come back.
      assert.strictEqual(
        Option.getOrThrow(yield* asset("app.js")).body,
        Option.getOrThrow(yield* asset("app.js")).body
      )
    }))
})
