/**
 * The Costs page over the in-memory Claude under TestClock: its totals and top spenders are what `fleet.costs`
 * says, spend by day as chart columns, the window chooser (a bad bound is a 400 that says why), escaping; and on a
 * real loopback port, the CSV download (`Costs.toCsv`, `text/csv`, an attachment) and `/api/costs`.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Costs from "@flotta/core/Costs"
import type { CostReport } from "@flotta/core/Costs"
import { Flotta } from "@flotta/core/Flotta"
import * as Testing from "@flotta/core/Testing"
import { Effect, TestClock } from "effect"
import * as http from "node:http"
import * as CostsPage from "../src/CostsPage.js"
import { dollars } from "../src/PageParts.js"
import { render } from "../src/Pages.js"
import { serveOver } from "./support.js"

const fleet = Testing.layer({ model: ({ prompt }) => `echo: ${prompt}` })

const page = (search: string, fragment = false) =>
  render({ page: "costs", fragment, query: new URLSearchParams(search) })

const ENTITIES: Record<string, string> = { "&lt;": "<", "&gt;": ">", "&quot;": "\"", "&#39;": "'", "&amp;": "&" }
const text = (markup: string) =>
  markup.replace(/<[^>]*>/g, "").replace(/&(?:lt|gt|quot|#39|amp);/g, (e) => ENTITIES[e]!).trim()

/** A table's body rows as text cells. */
const rowsOf = (markup: string, label: string) => {
  const table = new RegExp(`<table aria-label="${label}">([\\s\\S]*?)</table>`).exec(markup)?.[1]
  assert.isDefined(table, `no table ${label}`)
  const body = /<tbody>([\s\S]*?)<\/tbody>/.exec(table!)![1]!
  return [...body.matchAll(/<tr>([\s\S]*?)<\/tr>/g)].map((row) =>
    [...row[1]!.matchAll(/<td[^>]*>([\s\S]*?)<\/td>/g)].map((cell) => text(cell[1]!))
  )
}

/** The rows a report's groups should make (top ten): key, cost, share, turns. */
const expected = (report: CostReport) =>
  report.groups.slice(0, CostsPage.TOP).map((g) => [
    g.key ?? `(no ${report.by})`,
    dollars(g.costUsd),
    `${((g.costUsd / report.totalUsd) * 100).toFixed(1)}%`,
    String(g.turns)
  ])

const totalOf = (markup: string, label: string) =>
  text(new RegExp(`aria-label="${label}"><dt>${label}</dt><dd>([\\s\\S]*?)</dd>`).exec(markup)?.[1] ?? "")

const DAY = CostsPage.DAY

/** Turns over three days: alpha (opus) twice on day 0, beta (haiku) once on day 1, alpha once on day 2 (today). */
const spend = Effect.gen(function*() {
  const fleet = yield* Flotta
  yield* fleet.spawn("alpha", { model: "opus" })
  yield* fleet.spawn("beta", { model: "haiku" })
  yield* fleet.ask("alpha", "one")
  yield* fleet.ask("alpha", "two")
  yield* TestClock.adjust(DAY)
  yield* fleet.ask("beta", "three")
  yield* TestClock.adjust(DAY)
  yield* fleet.ask("alpha", "four")
  return fleet
})

describe("the Costs page", () => {
  it.effect("every agent and run it lists links to a page that is there, a closed one's too", () =>
    Effect.gen(function*() {
      const fleet = yield* spend
      yield* fleet.close("beta")
      yield* fleet.awaitRun(yield* fleet.runAsync({ name: "errand", prompt: "async" }))
      yield* fleet.run({ name: "quick", prompt: "sync" })
      const { html } = yield* page("since=all")
      const links = [...html.matchAll(/<a href="(\/(?:agents|runs)\/[^"]+)">/g)].map((m) => m[1]!)
      assert.includeMembers(links, ["/agents/alpha", "/agents/beta", "/runs/errand", "/runs/quick"])
      assert.include(html, `<a href="/runs/errand">errand</a>`)
      for (const link of links) {
        const [, kind, name] = link.split("/")
        const target = yield* render({
          page: kind === "agents" ? "agent" : "run",
          name: decodeURIComponent(name!),
          fragment: true,
          query: new URLSearchParams()
        })
        assert.strictEqual(target.status, 200, link)
      }
      assert.include(
        (yield* render({ page: "agent", name: "beta", fragment: true, query: new URLSearchParams() })).html,
        "pill-closed"
      )
    }).pipe(Effect.provide(fleet)))

  it.effect("shows the totals and the top spenders that fleet.costs gives, in the nav, with charts and CSV links", () =>
    Effect.gen(function*() {
      const fleet = yield* spend
      const { html, status } = yield* page("since=all")
      assert.strictEqual(status, 200)
      assert.include(html, `<a href="/costs" aria-current="page">Costs</a>`)
      assert.include(html, `data-page="costs"`)

      const today = yield* fleet.costs({ since: "1970-01-03" })
      const week = yield* fleet.costs({ since: "7d" })
      const all = yield* fleet.costs({})
      assert.approximately(all.totalUsd, 0.004, 1e-9)
      assert.strictEqual(all.turns, 4)
      assert.strictEqual(totalOf(html, "Today"), `${dollars(today.totalUsd)} ${today.turns} turn`)
      assert.strictEqual(today.turns, 1)
      assert.strictEqual(totalOf(html, "Last 7 days"), `${dollars(week.totalUsd)} ${week.turns} turns`)
      assert.strictEqual(totalOf(html, "This window"), `${dollars(all.totalUsd)} ${all.turns} turns`)

      const byAgent = yield* fleet.costs({ by: "agent" })
      const byModel = yield* fleet.costs({ by: "model" })
      const byRun = yield* fleet.costs({ by: "run" })
      assert.deepStrictEqual(rowsOf(html, "Top agents"), expected(byAgent))
      assert.deepStrictEqual(rowsOf(html, "Top agents").map((r) => r[0]), ["alpha", "beta"])
      assert.deepStrictEqual(rowsOf(html, "Top models"), expected(byModel))
      assert.deepStrictEqual(rowsOf(html, "Top models").map((r) => r[0]), ["opus", "haiku"])
      assert.deepStrictEqual(rowsOf(html, "Top runs"), expected(byRun))
      assert.deepStrictEqual(rowsOf(html, "Top runs"), [["(no run)", "$0.0040", "100.0%", "4"]])
      assert.include(html, `<a href="/agents/alpha">alpha</a>`)

      assert.include(html, `<a href="/costs.csv?by=agent&amp;since=all" download`)
      assert.include(html, `<a href="/costs.csv?by=model&amp;since=all" download`)
      assert.include(html, `data-src="/api/costs?since=all"`)
      assert.include(html, "<figcaption>Spend by day</figcaption>")
      assert.include(html, `src="/assets/uplot.iife.min.js"`)
      assert.include(html, `<a href="/costs?since=all" aria-current="true">All time</a>`)
      assert.include(html, `<input id="since" name="since" value="all"`)

      // The live region alone: the totals and the tables, not the chooser or the chart.
      const fragment = yield* page("since=all", true)
      assert.include(fragment.html, `<table aria-label="Top models">`)
      assert.notInclude(fragment.html, "Spend by day")
      assert.notInclude(fragment.html, `<input id="since"`)
    }).pipe(Effect.provide(fleet)))

  it.effect("narrows everything to the chosen window; no window is the last 30 days", () =>
    Effect.gen(function*() {
      const fleet = yield* spend
      const { html } = yield* page("since=1970-01-02")
      const window = yield* fleet.costs({ since: "1970-01-02" })
      assert.strictEqual(window.turns, 2)
      assert.strictEqual(totalOf(html, "This window"), `${dollars(window.totalUsd)} 2 turns`)
      assert.deepStrictEqual(
        rowsOf(html, "Top agents"),
        expected(yield* fleet.costs({ since: "1970-01-02", by: "agent" }))
      )
      assert.deepStrictEqual(rowsOf(html, "Top agents").map((r) => r[3]), ["1", "1"])
      assert.include(html, "From 1970-01-02 00:00 to now UTC")

      const until = yield* page("since=all&until=1970-01-02")
      assert.deepStrictEqual(rowsOf(until.html, "Top models"), [["opus", "$0.0020", "100.0%", "2"]])

      const byDefault = yield* page("")
      assert.include(byDefault.html, `<a href="/costs?since=30d" aria-current="true">30 days</a>`)
      assert.strictEqual(
        totalOf(byDefault.html, "This window"),
        `${dollars((yield* fleet.costs({})).totalUsd)} 4 turns`
      )

      const nothing = yield* page("since=1980-01-01")
      assert.strictEqual(totalOf(nothing.html, "This window"), "$0.0000 0 turns")
      assert.include(nothing.html, "No spend in this window.")
    }).pipe(Effect.provide(fleet)))

  it.effect("a bound Costs cannot read is a 400 that says why, escaped, with the chooser kept", () =>
    Effect.gen(function*() {
      const { html, status } = yield* page(`since=<script>x</script>`)
      assert.strictEqual(status, 400)
      assert.include(html, "is neither a span back from now")
      assert.include(html, "&lt;script&gt;x&lt;/script&gt;")
      assert.notInclude(html, "<script>x</script>")
      assert.include(html, `<form method="get" action="/costs"`)
    }).pipe(Effect.provide(fleet)))

  it.effect("escapes what it shows: a model's name is text", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      yield* fleet.spawn("gamma", { model: `<img src=x onerror="alert(1)">` })
      yield* fleet.ask("gamma", "hi")
      const { html } = yield* page("since=all")
      assert.notInclude(html, "<img src=x")
      assert.include(html, "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;")
      assert.deepStrictEqual(rowsOf(html, "Top models").map((r) => r[0]), [`<img src=x onerror="alert(1)">`])
    }).pipe(Effect.provide(fleet)))

  it.effect("charts spend by day: every day of the window, zero where nothing was spent", () =>
    Effect.gen(function*() {
      const fleet = yield* spend
      const byDay = yield* fleet.costs({ by: "day", since: "1969-12-31" })
      const { costPerDay } = yield* CostsPage.chartData(new URLSearchParams("since=1969-12-31"))
      assert.deepStrictEqual(costPerDay.series, ["Spend"])
      assert.deepStrictEqual(costPerDay.data[0], [-1, 0, 1, 2].map((d) => (d * DAY) / 1000))
      assert.deepStrictEqual(costPerDay.data[1], [0, 0.002, 0.001, 0.001])
      assert.approximately(
        costPerDay.data[1]!.reduce((sum: number, v) => sum + (v ?? 0), 0),
        byDay.totalUsd,
        1e-9
      )
      // An open window starts on its first day with spend; one that spent nothing has no series.
      const open = CostsPage.perDay(yield* fleet.costs({ by: "day" }), 2 * DAY)
      assert.strictEqual(open.data[0]!.length, 3)
      const none = CostsPage.perDay(yield* fleet.costs({ by: "day", since: "1980-01-01" }), 2 * DAY)
      assert.deepStrictEqual(none.series, [])
    }).pipe(Effect.provide(fleet)))
})

// ------------------------------------------------------------------------------------------------ over HTTP

interface Reply {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  readonly body: string
}

const get = (url: string) =>
  Effect.async<Reply, Error>((resume) => {
    const req = http.request(url, { agent: false }, (res) => {
      let body = ""
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => (body += chunk))
      res.on("end", () => resume(Effect.succeed({ status: res.statusCode ?? 0, headers: res.headers, body })))
    })
    req.on("error", (error) => resume(Effect.fail(error)))
    req.end()
  })

const serve = serveOver(fleet)

describe("the Costs page's routes", () => {
  it.scoped("/costs.csv is Costs.toCsv of the window, as a text/csv attachment; /api/costs the chart", () =>
    Effect.gen(function*() {
      const { base, fleet } = yield* serve
      yield* fleet.spawn("alpha", { model: "opus" })
      yield* fleet.spawn("beta", { model: "haiku" })
      yield* fleet.ask("alpha", "one")
      yield* fleet.ask("beta", "two")
      yield* fleet.ask("beta", "three")

      const costsPage = yield* get(`${base}/costs?since=all`)
      assert.strictEqual(costsPage.status, 200)
      assert.include(costsPage.body, `<table aria-label="Top agents">`)

      const byModel = yield* get(`${base}/costs.csv?by=model&since=7d`)
      assert.strictEqual(byModel.status, 200)
      assert.match(byModel.headers["content-type"] ?? "", /^text\/csv; charset=utf-8/)
      assert.strictEqual(byModel.headers["content-disposition"], `attachment; filename="flotta-costs-by-model.csv"`)
      assert.strictEqual(byModel.body, Costs.toCsv(yield* fleet.costs({ by: "model", since: "7d" })))
      assert.strictEqual(byModel.body, "model,cost_usd,turns\nhaiku,0.002000,2\nopus,0.001000,1\n")

      const byAgent = yield* get(`${base}/costs.csv?since=all`)
      assert.strictEqual(byAgent.headers["content-disposition"], `attachment; filename="flotta-costs-by-agent.csv"`)
      assert.strictEqual(byAgent.body, Costs.toCsv(yield* fleet.costs({ by: "agent" })))

      const badBy = yield* get(`${base}/costs.csv?by=colour`)
      assert.strictEqual(badBy.status, 400)
      assert.include(JSON.parse(badBy.body).error._tag, "InvalidSpec")
      const badSince = yield* get(`${base}/costs.csv?since=yesterday`)
      assert.strictEqual(badSince.status, 400)

      const chart = yield* get(`${base}/api/costs?since=all`)
      assert.strictEqual(chart.status, 200)
      const data = JSON.parse(chart.body) as { costPerDay: { series: Array<string>; data: Array<Array<number>> } }
      assert.deepStrictEqual(data.costPerDay, { series: ["Spend"], data: [[0], [0.003]] })
    }))
})
